package restcatalog

import (
	"net/http"
)

// The spec's deprecated OAuth2 token endpoint, POST /v1/oauth/tokens. The
// server issues no tokens (a client sends the bearer token it was given),
// so it answers every request with the spec's OAuthError: 400
// unsupported_grant_type for a grant it could name, invalid_request for a
// request that is not one. Routes in front of the Server that refuse a
// request there (the appliance's token check) answer with
// WriteOAuthError too.

// OAuthPath is the token endpoint's path, below the Server's mount point.
const OAuthPath = "/v1/oauth/tokens"

func (s *Server) oauthTokens(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") == "" {
		WriteOAuthError(w, http.StatusBadRequest, "invalid_request", "want an application/x-www-form-urlencoded body with a grant_type")
		return
	}
	WriteOAuthError(w, http.StatusBadRequest, "unsupported_grant_type",
		"this catalog issues no tokens: send the bearer token you were given in Authorization")
}

// WriteOAuthError sends the spec's OAuthError {"error", "error_description"}
// with status code; kind is one of the spec's error codes (invalid_request,
// invalid_client, unsupported_grant_type, ...).
func WriteOAuthError(w http.ResponseWriter, code int, kind, description string) {
	writeJSON(w, code, map[string]string{"error": kind, "error_description": description})
}
