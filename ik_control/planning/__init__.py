"""Motion planning to workspace goals: JT-RRT, the Bertram baseline, RRT-Connect."""
