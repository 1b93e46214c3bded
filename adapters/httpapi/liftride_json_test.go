package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// decodeBoth decodes body as the generated handler does (a json.Decoder
// into a LiftRide, so through UnmarshalJSON) and as encoding/json alone
// would, and describes each result.
func decodeBoth(body string) (got, want string) {
	describe := func(t, l *int32, err error) string {
		show := func(p *int32) string {
			if p == nil {
				return "nil"
			}
			return fmt.Sprint(*p)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return "time " + show(t) + ", liftID " + show(l)
	}
	var r LiftRide
	err := json.Unmarshal([]byte(body), &r)
	type plain LiftRide // LiftRide as the generator made it, without UnmarshalJSON
	var p plain
	perr := json.Unmarshal([]byte(body), &p)
	want = strings.NewReplacer("plain", "LiftRide").Replace(describe(p.Time, p.LiftID, perr))
	return describe(r.Time, r.LiftID, err), want
}

var rideBodies = []string{
	`{"time":217,"liftID":21}`,
	`{"liftID":21,"time":217}`,
	` { "time" : 0 , "liftID" : 1000 } `,
	"{\n\t\"time\":\r\n1439,\"liftID\":-1}",
	`{"time":-0,"liftID":7}`,
	`{"time":2147483647,"liftID":-2147483648}`,
	`{"time":2147483648,"liftID":1}`,
	`{"time":-2147483649,"liftID":1}`,
	`{"time":99999999999999999999,"liftID":1}`,
	`{"time":1.5,"liftID":1}`,
	`{"time":1e2,"liftID":1}`,
	`{"time":1E2,"liftID":1}`,
	`{"time":"217","liftID":21}`,
	`{"time":true,"liftID":21}`,
	`{"time":null,"liftID":21}`,
	`{"time":217}`,
	`{"liftID":21}`,
	`{}`,
	`null`,
	`[]`,
	`{"TIME":217,"LIFTID":21}`,
	`{"time":217,"time":218}`,
	`{"time":217,"liftID":21,"extra":1}`,
	`{"time":017,"liftID":21}`,
	`{"time":217,"liftID":21`,
	`{"time":217,"liftID":21}x`,
	`{"time":-,"liftID":21}`,
	`{"ti\u006de":217,"liftID":21}`,
}

// TestLiftRideDecodesAsEncodingJSONDoes: the direct reading of a ride's
// body gives, for every body, the same ride or the same error as
// encoding/json would.
func TestLiftRideDecodesAsEncodingJSONDoes(t *testing.T) {
	for _, body := range rideBodies {
		if got, want := decodeBoth(body); got != want {
			t.Errorf("%s: decoded %s; encoding/json: %s", body, got, want)
		}
	}
}

// TestTheRideBodyClientsSendIsReadDirectly: the common body takes the
// direct path (a regression here would not change any answer, only the
// CPU a POST costs).
func TestTheRideBodyClientsSendIsReadDirectly(t *testing.T) {
	for _, body := range rideBodies[:6] {
		if _, _, ok := scanRide([]byte(body)); !ok {
			t.Errorf("%s: not read directly", body)
		}
	}
}

func FuzzLiftRideDecodesAsEncodingJSONDoes(f *testing.F) {
	for _, body := range rideBodies {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if got, want := decodeBoth(body); got != want {
			t.Errorf("%q: decoded %s; encoding/json: %s", body, got, want)
		}
	})
}
