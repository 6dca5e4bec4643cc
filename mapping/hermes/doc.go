// Package hermes holds the wire types and pure codecs of the Hermes agent
// API (NousResearch hermes-agent's API server): the session stream's named
// frames (run.started ... done) both ways, the session and run request
// bodies, the session, run and message objects, the history in the Hermes
// and chatkit Hermes shapes, and the two-way error table. No I/O here.
package hermes
