// Package hermes serves the Hermes agent API (NousResearch hermes-agent's
// API server) from the bridge: the session API (/api/sessions...), the
// session stream of named frames with SSE ids and Last-Event-ID resume,
// the run object and POST /v1/runs for the common run API (inbound/runs
// serves the other /v1/runs paths for every dialect), history in the
// Hermes and chatkit Hermes shapes, and GET /v1/capabilities.
//
// Session metadata Hermes has and the bridge's store does not (title, end
// reason, parent, system prompt, deletion) is kept in the handler's
// memory: GET /api/sessions lists the sessions this process created or
// served; a stored session is still found by id after a restart.
package hermes
