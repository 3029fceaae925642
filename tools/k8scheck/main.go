// Command k8scheck checks a Spark executor pod template for the pixelflight
// sidecar: it decodes the YAML strictly into a Kubernetes core/v1 Pod (an
// unknown or misspelt field is an error, as the API server's strict field
// validation makes it) and checks what the Spark side relies on:
//
//   - the executor container, named by -container
//     (spark.kubernetes.executor.podTemplateContainerName), is in containers;
//   - a sidecar runs `pixelflight serve --listen <-endpoint>` (the executors'
//     spark.executorEnv.PIXELFLIGHT_ENDPOINT), as a native sidecar (an init
//     container with restartPolicy: Always) or a plain container;
//   - the socket's directory is an emptyDir volume mounted in both;
//   - the sidecar holds the nvidia.com/gpu limit and the executor does not.
//
// Usage: k8scheck -container spark-executor -endpoint grpc+unix:///var/run/pixelflight/pixelflight.sock pod.yaml...
// It prints one line per problem and exits 1, or exits 0.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"path"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func main() {
	container := flag.String("container", "spark-executor", "the executor container's name (spark.kubernetes.executor.podTemplateContainerName)")
	endpoint := flag.String("endpoint", "", "the executors' PIXELFLIGHT_ENDPOINT, grpc+unix:///dir/name.sock")
	flag.Parse()
	if flag.NArg() == 0 || *endpoint == "" {
		fmt.Fprintln(os.Stderr, "usage: k8scheck -container NAME -endpoint grpc+unix:///dir/s.sock pod.yaml...")
		os.Exit(2)
	}
	bad := false
	for _, f := range flag.Args() {
		data, err := os.ReadFile(f)
		if err == nil {
			for _, p := range Check(data, *container, *endpoint) {
				fmt.Printf("%s: %s\n", f, p)
				bad = true
			}
			continue
		}
		fmt.Printf("%s: %v\n", f, err)
		bad = true
	}
	if bad {
		os.Exit(1)
	}
}

// Check returns the template's problems, none when it is usable.
func Check(data []byte, container, endpoint string) []string {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		return []string{"not a strict core/v1 Pod: " + err.Error()}
	}
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		fail("apiVersion/kind is %q/%q, want v1/Pod", pod.APIVersion, pod.Kind)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "grpc+unix" || u.Host != "" || !path.IsAbs(u.Path) {
		return append(errs, fmt.Sprintf("endpoint %q: want grpc+unix:///dir/name.sock", endpoint))
	}
	sockDir := path.Dir(u.Path)

	var exec *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			exec = &pod.Spec.Containers[i]
		}
	}
	if exec == nil {
		fail("no container named %q in containers (spark.kubernetes.executor.podTemplateContainerName)", container)
	}

	side, native := findSidecar(pod.Spec.InitContainers), true
	if side == nil {
		side, native = findSidecar(pod.Spec.Containers), false
	}
	if side == nil {
		return append(errs, "no sidecar: no container runs `pixelflight serve --listen ...`")
	}
	if listen := listenOf(side); listen != endpoint {
		fail("sidecar %q listens on %s, but the executors' PIXELFLIGHT_ENDPOINT is %s", side.Name, listen, endpoint)
	}
	if native && (side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
		fail("init container %q needs restartPolicy: Always (a native sidecar); without it the pod waits for it to exit before starting the executor", side.Name)
	}
	if q, ok := side.Resources.Limits[gpu]; !ok || q.Sign() <= 0 {
		fail("sidecar %q has no %s limit", side.Name, gpu)
	}
	if exec != nil {
		if _, ok := exec.Resources.Limits[gpu]; ok {
			fail("executor container %q also has a %s limit: the GPU belongs to the sidecar", exec.Name, gpu)
		}
	}

	sideVol := mountAt(side, sockDir)
	if sideVol == "" {
		fail("sidecar %q does not mount %s (the socket's directory)", side.Name, sockDir)
	}
	if exec != nil {
		if v := mountAt(exec, sockDir); v == "" {
			fail("executor container %q does not mount %s (the socket's directory)", exec.Name, sockDir)
		} else if sideVol != "" && v != sideVol {
			fail("sidecar and executor mount different volumes at %s: %q and %q", sockDir, sideVol, v)
		}
	}
	if sideVol != "" {
		found := false
		for _, v := range pod.Spec.Volumes {
			if v.Name == sideVol {
				found = true
				if v.EmptyDir == nil {
					fail("volume %q is not an emptyDir", sideVol)
				}
			}
		}
		if !found {
			fail("volume %q is mounted but not in volumes", sideVol)
		}
	}
	return errs
}

// findSidecar returns the first container whose command line is
// `... serve ... --listen LOC ...`.
func findSidecar(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if listenOf(&cs[i]) != "" {
			return &cs[i]
		}
	}
	return nil
}

// listenOf is the --listen value of a `pixelflight serve` command line.
func listenOf(c *corev1.Container) string {
	argv := append(append([]string{}, c.Command...), c.Args...)
	serve := false
	for i, a := range argv {
		switch {
		case a == "serve":
			serve = true
		case serve && a == "--listen" && i+1 < len(argv):
			return argv[i+1]
		case serve && len(a) > 9 && a[:9] == "--listen=":
			return a[9:]
		}
	}
	return ""
}

// mountAt is the name of the volume c mounts at dir, or "".
func mountAt(c *corev1.Container, dir string) string {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == dir {
			return m.Name
		}
	}
	return ""
}
