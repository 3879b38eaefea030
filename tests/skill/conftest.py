"""SkillService fixtures (defined in skill_helpers, which tests import by a unique name)."""

from skill_helpers import skill_config, skill_server, stub, two_tenants  # noqa: F401
