"""SkillService: the skill and tool registry, progressive disclosure and tool execution."""
