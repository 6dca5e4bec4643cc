package wire

import (
	"net/http"
	"strconv"
)

// StatusMessage is the message of an upstream error whose body said
// nothing: "upstream returned status 503 (Service Unavailable)", or
// "upstream error" for status 0 (an error inside a stream).
func StatusMessage(status int) string {
	if status == 0 {
		return "upstream error"
	}
	m := "upstream returned status " + strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		m += " (" + t + ")"
	}
	return m
}
