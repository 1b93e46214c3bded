package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/skidata/skidata/domain"
)

var rideFields = []string{"liftID", "time"}

func TestFlatObjectFastPathTakesOnlyWhatTheRulesAllow(t *testing.T) {
	for body, want := range map[string]bool{
		`{"time":217,"liftID":21}`:               true,
		` { "liftID" : 5 , "time" : 0 } ` + "\n": true,
		`{}`:                                     true,
		`{"TIME":3,"LIFTID":4}`:                  false, // case-sensitive names
		`{"time":1,"time":2}`:                    false, // twice
		`{"time":1,"liftID":2}{"time":5}`:        false, // trailing data
		`{"time":1,"liftID":2,"x":1}`:            false, // not in the spec
		`{"time":"1","liftID":2}`:                false, // strings go the slow way
		`{"ti\u006de":1}`:                        false, // escapes go the slow way
		`[1]`:                                    false,
		``:                                       false,
	} {
		if got := flatObjectOK([]byte(body), rideFields); got != want {
			t.Errorf("flatObjectOK(%q) = %v; want %v", body, got, want)
		}
	}
}

// FuzzFlatObjectFastPath: whatever the fast path accepts, the token walk
// accepts too, or finds only a malformed value, which the generated decoder
// refuses after it; the fast path never lets through a body the rules
// refuse (a wrong name, a repeat, trailing data).
func FuzzFlatObjectFastPath(f *testing.F) {
	for _, s := range []string{`{"time":217,"liftID":21}`, `{"time":1,"time":2}`, `{"time":1}{"time":2}`, `{"time":truex}`, `{"liftID":-0.5e+3}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !flatObjectOK(b, rideFields) {
			return
		}
		err := walkBody(b, rideFields)
		var syntax *json.SyntaxError
		if err != nil && (errors.Is(err, domain.ErrInvalid) || !(errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF))) {
			t.Fatalf("fast path accepted %q, which the rules refuse: %v", b, err)
		}
	})
}
