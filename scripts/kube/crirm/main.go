// crirm stops and removes every pod sandbox (and so every container) of a
// CRI runtime, as `crictl rmp -fa` would: through the CRI, so that the
// runtime tears down each pod's network namespace and CNI address too.
//
//	crirm unix:///run/…/containerd.sock
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crirm unix:///path/to/cri.sock")
		os.Exit(2)
	}
	conn, err := grpc.NewClient(os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	rt := runtime.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pods, err := rt.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
	if err != nil {
		fail(err)
	}
	failed := 0
	for _, p := range pods.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "crirm: stop %s (%s): %v\n", p.Id, p.Metadata.GetName(), err)
			failed++
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "crirm: remove %s (%s): %v\n", p.Id, p.Metadata.GetName(), err)
			failed++
		}
	}
	fmt.Printf("crirm: %d pod sandboxes removed, %d failed\n", len(pods.Items)-failed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "crirm:", err)
	os.Exit(1)
}
