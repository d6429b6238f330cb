"""SimPy simulator and closed-form alpha-beta-gamma cost model of collective schedules."""
