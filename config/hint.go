package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

func newOffsetFinder(raw []byte) func() (int64, bool) {
	return func() (int64, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		for {
			_, err := dec.Token()
			if err == nil {
				continue
			}
			if errors.Is(err, io.EOF) {
				return dec.InputOffset(), true
			}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return se.Offset, true
			}
			return dec.InputOffset(), true
		}
	}
}
