// Package redact hides the credentials of server URLs (nats://user:pass@host,
// redis://:pass@host) before they reach logs or error messages.
package redact

import (
	"strconv"
	"strings"
)

// URLs returns a comma-separated URL list with the user information of each
// URL replaced by REDACTED.
func URLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at > 0 {
			if scheme := strings.Index(p, "://"); scheme >= 0 && scheme < at {
				parts[i] = p[:scheme+3] + "REDACTED" + p[at:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// Error returns err's text with the user information of every URL in list
// hidden: url.Parse errors quote the whole URL, password included.
func Error(err error, list string) string {
	msg := err.Error()
	for _, p := range strings.Split(list, ",") {
		at, scheme := strings.LastIndex(p, "@"), strings.Index(p, "://")
		if scheme < 0 || at <= scheme+3 {
			continue
		}
		info := p[scheme+3 : at]
		quoted := strconv.Quote(info)
		msg = strings.ReplaceAll(msg, quoted[1:len(quoted)-1], "REDACTED")
		msg = strings.ReplaceAll(msg, info, "REDACTED")
	}
	return msg
}
