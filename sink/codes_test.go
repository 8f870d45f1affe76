package sink

import "testing"

func TestParseCode(t *testing.T) {
	for _, c := range []struct {
		in        string
		permanent bool
		want      Code
	}{
		{"rejected", false, CodeRejected}, // a known code is kept as it is
		{"too-large", true, CodeTooLarge},
		{"unauthorized", false, CodeUnauthorized},
		{"", true, CodeRejected},
		{"", false, CodeUnavailable},
		{"webhook-500", false, CodeUnavailable},
		{"schema-violation", true, CodeRejected},
		{"REJECTED", true, CodeRejected}, // not the code: mapped by permanence
	} {
		if got := ParseCode(c.in, c.permanent); got != c.want || !got.Known() {
			t.Errorf("ParseCode(%q, %v) = %q, want %q", c.in, c.permanent, got, c.want)
		}
	}
}
