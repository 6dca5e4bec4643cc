// Package hermes is the client for a Hermes agent API upstream
// (NousResearch hermes-agent's API server): it creates or reuses the
// upstream session through the id map, streams each turn through
// /api/sessions/{id}/chat/stream, reads the frames as the agent's events
// (its tools as its own activity, _thinking as reasoning), and stops a
// turn through /v1/runs/{run_id}/stop. hermestest is a fake Hermes server
// written from the protocol note.
package hermes
