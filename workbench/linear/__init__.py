"""The linear technique's measuring wing: figure producers, benchmarks against its peers, plots of results."""
