// Package adk serves the Google ADK api_server API over the bridge's
// engine: GET /list-apps, the sessions of /apps/{app}/users/{user}/sessions
// (create, get, list, delete), POST /run and POST /run_sse, with the chatkit
// conventions the real server lacks: each run_sse stream ends with
// `data: [DONE]`, a run_sse request with lastEventId and no newMessage
// resumes the run after that event, and GET of a session carries
// session.status and active_run.
//
// An ADK session is a bridge session (its transcript is replayed to a
// stateless upstream each turn); its app, user, id and state are kept in
// the bridge session's State, and the ADK key (principal, app, user, id)
// finds it through the store's id map. The session's events are rendered
// from the runs' stored events, so their ids are the ids the streams
// carried.
package adk
