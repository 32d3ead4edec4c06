"""graphcost.train."""
