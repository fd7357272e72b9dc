// Package deploy has no code of its own: its tests prove the deployment
// artifacts that no Go code imports — .goreleaser.yml, the docker-compose lab
// under examples/, the Kubernetes manifests under examples/kubernetes/ and
// the local demo (scripts/demo.sh) — on a machine without Docker or a
// Kubernetes cluster.
package deploy
