"""graphcost.frontend."""
