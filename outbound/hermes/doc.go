// Package hermes is the client for a Hermes agent API upstream
// (NousResearch hermes-agent's API server): it creates or reuses the
// upstream session through the id map, streams each turn through
// /api/sessions/{id}/chat/stream, reads the frames as the agent's events
// (its tools as its own activity, _thinking as reasoning), and stops a
// turn through /v1/runs/{run_id}/stop. Over a server that takes the
// client's tools (another bridge), the model's calls come back for the
// client and their results continue the same upstream run. A broken
// stream, or a run a restart left running, is resumed after the last frame
// read (Last-Event-ID), or, where the server cannot resume (Hermes' own),
// settled from the run's status. hermestest is a fake Hermes server
// written from the protocol note.
package hermes
