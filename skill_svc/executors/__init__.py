"""Tool executors, one per implementation type, behind one interface (see ``base``)."""
