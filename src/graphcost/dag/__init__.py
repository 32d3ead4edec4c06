"""graphcost.dag."""
