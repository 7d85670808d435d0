"""What only biaslens's own tests use: a hub-compatible HTTP server and a fault-injecting proxy."""
