package dial

import (
	"strings"
	"testing"
)

func TestTargetUnixWithHost(t *testing.T) {
	for _, ep := range []string{"grpc+unix://tmp/pixelflight.sock", "unix://tmp/pixelflight.sock"} {
		if _, _, err := Target(ep); err == nil || !strings.Contains(err.Error(), `(three slashes): "tmp" would be read as a host`) {
			t.Errorf("%s: %v, want it refused for its host", ep, err)
		}
	}
	if _, _, err := Target("grpc+unix:tmp/pixelflight.sock"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("opaque endpoint: %v", err)
	}
	if tgt, _, err := Target("grpc+unix:///tmp/pixelflight.sock"); err != nil || tgt != "unix:///tmp/pixelflight.sock" {
		t.Errorf("three slashes: %q %v", tgt, err)
	}
}
