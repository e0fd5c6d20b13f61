"""One module per `locktune` subcommand; each exposes a click command named `command`."""
