"""Reading production traces (calls, entities, identities, goals), shared by forge and world."""
