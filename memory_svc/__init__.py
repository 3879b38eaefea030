"""MemoryService: scoped vector memory (session, user, agent, organization) on pgvector."""
