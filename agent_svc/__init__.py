"""AgentService: agents, chat sessions and the Think -> Retrieve -> LLM -> Execute loop."""
