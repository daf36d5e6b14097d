"""Tables for the terminal, Markdown, JSON and JUnit, from results and analysis; no physics."""
