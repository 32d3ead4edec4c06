"""graphcost.models."""
