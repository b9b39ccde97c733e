"""The controller process: the planning loop, leader election, policy reload, HTTP endpoints."""
