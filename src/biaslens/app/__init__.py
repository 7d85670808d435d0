"""A local web app with the papers' interactive tools (CID playground, specification detector,
dose-response sweep), served by FastAPI on 127.0.0.1."""
