"""graphcost.data."""
