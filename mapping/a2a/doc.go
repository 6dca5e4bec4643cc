// Package a2a is the A2A (Agent2Agent) dialect, JSON-RPC binding: v0.3
// first, and A2A 1.0's shapes where a request asks for them. It holds the
// pure codecs, both directions, and the error table; nothing here does I/O
// beyond the io.Reader and io.Writer it is handed. The protocol types are
// those of github.com/a2aproject/a2a-go (imported as a2asdk); the JSON is
// read and written here, case-sensitively and in both versions' shapes.
//
//   - DecodeRequest parses a JSON-RPC POST body into requests (batches and
//     notifications included); DecodeSendParams, DecodeTaskParams and
//     DecodeListParams read their params; HubMessage turns a client's
//     message into the hub's.
//   - TaskBuilder folds a run's events into the A2A Task they describe;
//     NewStreamEncoder writes the events as SSE frames, each one JSON-RPC
//     response on one data: line with an id: (the event's cursor):
//     the Task, then status-update and artifact-update events.
//   - AppendTask renders a Task; EncodeHistory renders a session's
//     history as {tasks, nextPageToken} (the chatkit A2A convention).
//   - EncodeCard renders the bridge's agent card (0.3 fields plus a 1.0
//     supportedInterfaces entry); DecodeCard reads an upstream's card.
//   - EncodeSend and EncodeTaskRequest build requests for an A2A upstream;
//     StreamDecoder turns its SSE frames and results into hub events, in the
//     a2a or adk profile; DecodeError reads its errors in every shape servers
//     use. EncodeError and DecodeError are the two-way error table.
//
// Codecs are safe for concurrent use; a StreamEncoder, TaskBuilder or
// StreamDecoder belongs to one stream and is not.
package a2a
