package harness

import (
	"bytes"
	"fmt"
)

// KongJSON returns a Kong declarative configuration (compact JSON, the
// shape the Kong Ingress Controller pushes: services with their routes,
// k8s tags) of about size bytes. The first service carries the tag
// "bench-stamp:000000000", whose digits a caller may overwrite to make
// variants that hash differently. The bench's scenarios and the config
// package's benchmarks measure the same bytes.
func KongJSON(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 1024)
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; ; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		stampTag := ""
		if i == 0 {
			stampTag = `,"bench-stamp:000000000"`
		}
		fmt.Fprintf(&b, `{"name":"default.svc-%06d.http","host":"svc-%06d.default.80.svc","port":80,"protocol":"http","path":"/","retries":5,"connect_timeout":60000,"read_timeout":60000,"write_timeout":60000,`+
			`"tags":["k8s-name:svc-%06d","k8s-namespace:default","k8s-kind:Service","k8s-version:v1"%s],`+
			`"routes":[{"name":"default.ingress-%06d.svc-%06d.example.com.80","hosts":["svc-%06d.example.com"],"paths":["/svc-%06d/","~/svc-%06d$"],"path_handling":"v0","preserve_host":true,"protocols":["http","https"],"regex_priority":0,"strip_path":false,"https_redirect_status_code":426,"request_buffering":true,"response_buffering":true,`+
			`"tags":["k8s-name:ingress-%06d","k8s-namespace:default","k8s-kind:Ingress","k8s-group:networking.k8s.io","k8s-version:v1"]}]}`,
			i, i, i, stampTag, i, i, i, i, i, i)
		if b.Len() >= size-64 {
			break
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}
