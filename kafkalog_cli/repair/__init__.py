"""Write side: plans (pure) and the writers that execute them through ``fileops``."""
