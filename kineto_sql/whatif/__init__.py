"""What a fix buys: each window's dependency graph (kineto.lib.dep_graph), replayed with changed
durations or dropped edges, its critical path, and the predicted step time of each finding's fix."""
from kineto_sql.whatif.graph import Graph, load_graph
from kineto_sql.whatif.replay import replay

__all__ = ["Graph", "load_graph", "replay"]
