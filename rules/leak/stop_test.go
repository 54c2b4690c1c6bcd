package leak

import "testing"

func TestIsEndName(t *testing.T) {
	for name, want := range map[string]bool{
		"Close": true, "Stop": true, "Shutdown": true, "Exit": true, "Cancel": true, "Quit": true,
		"CloseNow": true, "StopAndWait": true, "GracefulStop": true, "ForceClose": true, "ShutdownContext": true,
		// Questions and other work are not ends.
		"Closed": false, "IsClosed": false, "Stopped": false, "Exited": false,
		"CloseClientConnections": false, "CloseNotify": false, "Send": false, "Restart": false,
	} {
		if got := isEndName(name); got != want {
			t.Errorf("isEndName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMirrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		test, meth action
		want       bool
	}{
		{"stop by hand: a send where Close sends", acSend, acSend | acRecv, true},
		{"a close where Close sends", acClose, acSend, true},
		{"a close where Close closes", acClose, acClose, true},
		{"a cancel where Close cancels", acCall, acCall, true},
		{"work on a channel Close only closes", acSend, acClose, false},
		{"a receive is no end", acRecv, acSend | acClose, false},
		{"a flag only Close sets", acSet, acSet, true},
		{"setting a channel field Close sends on", acSet, acSet | acSend, false},
	} {
		if got := mirrors(tc.test, tc.meth); got != tc.want {
			t.Errorf("%s: mirrors = %v, want %v", tc.name, got, tc.want)
		}
	}
}
