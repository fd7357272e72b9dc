package redisproto

import "testing"

func TestParseView(t *testing.T) {
	const info = "cluster_state:ok\r\ncluster_current_epoch:7\r\n"
	v, err := ParseView("10.0.0.1:6379", idA+" 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-16383\n"+idD+" 10.0.0.2:6379@16379 slave "+idA+" 0 0 1 connected\n", info)
	if err != nil {
		t.Fatal(err)
	}
	if got := Addrs([]View{v}); len(got) != 2 || got[0] != "10.0.0.1:6379" || got[1] != "10.0.0.2:6379" {
		t.Errorf("Addrs = %v", got)
	}
	if _, err := ParseView("x", idD+" 10.0.0.2:6379@16379 slave "+idA+" 0 0 1 connected\n", info); err == nil {
		t.Error("a reply without a myself line: want an error")
	}
	if _, err := ParseView("x", idA+" 10.0.0.1:6379@16379 myself,master - 0 0 1 connected\n", "cluster_state:maybe\r\n"); err == nil {
		t.Error("a bad CLUSTER INFO: want an error")
	}
	if _, err := NewSlotMap(nil); err == nil {
		t.Error("no views: want an error")
	}
}
