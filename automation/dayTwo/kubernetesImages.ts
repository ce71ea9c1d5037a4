// Which images `talosctl upgrade-k8s` must run Kubernetes from. upgrade-k8s sets each component to
// `<image>:v<to>`, `<image>` being its flag (`--kubelet-image`, `--apiserver-image`, …) whose
// default is Talos' own registry (pkg/cluster/kubernetes/kubelet.go, talos_managed.go, Talos
// v1.13.0). A stack whose patches pin a component elsewhere (a registry mirror, an air-gapped
// registry) would be switched back to Talos' images by a bare upgrade-k8s, and its pre-pull would
// fail where those cannot be reached. So the images are read from the configs the stack generated
// (the outputs' machineConfigurations, where every patch has been applied) and passed as flags.
import { parseAllDocuments } from "yaml";
import { ExitCode, UserError } from "../errors";
import { type DeployedCluster, controlPlanes } from "./cluster";
import { KUBERNETES_COMPONENTS, type KubernetesComponent } from "./talosClient";
import { splitImage } from "./talosctlOutput";

/**
 * talosctl upgrade-k8s' default image of each component (constants.KubeletImage,
 * KubernetesAPIServerImage, … of pkg/machinery/constants, the same in Talos v1.13.0 and v1.14.1).
 */
export const TALOS_DEFAULT_IMAGES: Readonly<Record<KubernetesComponent, string>> = {
  kubelet: "ghcr.io/siderolabs/kubelet",
  apiserver: "registry.k8s.io/kube-apiserver",
  "controller-manager": "registry.k8s.io/kube-controller-manager",
  scheduler: "registry.k8s.io/kube-scheduler",
  proxy: "registry.k8s.io/kube-proxy",
};

/**
 * Where a config carries each component's image: the v1alpha1 key (`machine.kubelet.image`,
 * `cluster.apiServer.image`, …) or, from Talos 1.14, the `image` of its own document; and which
 * nodes run it (upgrade-k8s sets the kubelet on every node, the rest on control planes).
 */
const WHERE: Readonly<
  Record<KubernetesComponent, { path: readonly string[]; kind: string; controlPlaneOnly: boolean }>
> = {
  kubelet: {
    path: ["machine", "kubelet", "image"],
    kind: "KubeletConfig",
    controlPlaneOnly: false,
  },
  apiserver: {
    path: ["cluster", "apiServer", "image"],
    kind: "KubeAPIServerConfig",
    controlPlaneOnly: true,
  },
  "controller-manager": {
    path: ["cluster", "controllerManager", "image"],
    kind: "KubeControllerManagerConfig",
    controlPlaneOnly: true,
  },
  scheduler: {
    path: ["cluster", "scheduler", "image"],
    kind: "KubeSchedulerConfig",
    controlPlaneOnly: true,
  },
  proxy: { path: ["cluster", "proxy", "image"], kind: "KubeProxyConfig", controlPlaneOnly: true },
};

/** The images upgrade-k8s is to use, and the pins the stack file must follow up on. */
export interface KubernetesImages {
  /** `--<component>-image` for each component the configs run from somewhere else than Talos' default. */
  readonly flags: Readonly<Partial<Record<KubernetesComponent, string>>>;
  /**
   * Images the configs carry that are not what Talos generates for the deployed version (a patch
   * pins them, tag or digest included): after the upgrade the patch still names the old one.
   */
  readonly pinned: readonly { readonly component: KubernetesComponent; readonly image: string }[];
}

type Mapping = Record<string, unknown>;
const isMapping = (value: unknown): value is Mapping =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The image of `component` in one config, if it names one. */
function imageIn(config: string, component: KubernetesComponent): string | undefined {
  const { path, kind } = WHERE[component];
  let found: string | undefined;
  for (const document of parseAllDocuments(config) as unknown as { toJS(): unknown }[]) {
    const value = document.toJS();
    if (!isMapping(value)) continue;
    // A document of its own (Talos 1.14) says what the v1alpha1 key would.
    if (value.kind === kind && typeof value.image === "string") return value.image;
    let at: unknown = value;
    for (const key of path) at = isMapping(at) ? at[key] : undefined;
    if (typeof at === "string" && at !== "") found = at;
  }
  return found;
}

/**
 * The images of every component in the stack's generated configs. Refused (exit 3, named `what`)
 * when nodes run one component from different repositories: upgrade-k8s takes one for all of them.
 */
export function kubernetesImages(cluster: DeployedCluster, what: string): KubernetesImages {
  const flags: Partial<Record<KubernetesComponent, string>> = {};
  const pinned: { component: KubernetesComponent; image: string }[] = [];
  const deployed = `v${cluster.deployed.kubernetesVersion.replace(/^v/, "")}`;
  for (const component of KUBERNETES_COMPONENTS) {
    const nodes = WHERE[component].controlPlaneOnly ? controlPlanes(cluster) : cluster.nodes;
    const byRepository = new Map<string, string[]>();
    for (const node of nodes) {
      const config = cluster.machineConfigurations[node.name];
      const image = config === undefined ? undefined : imageIn(config, component);
      // Without one, Talos runs its default (the config's defaults fill it in).
      const repository =
        image === undefined ? TALOS_DEFAULT_IMAGES[component] : splitImage(image).name;
      byRepository.set(repository, [...(byRepository.get(repository) ?? []), node.name]);
      const generated = `${TALOS_DEFAULT_IMAGES[component]}:${deployed}`;
      if (image !== undefined && image !== generated && !pinned.some((p) => p.image === image)) {
        pinned.push({ component, image });
      }
    }
    if (byRepository.size > 1) {
      throw new UserError(
        {
          what,
          problem: `the configs run ${component} from ${byRepository.size} images, and talosctl upgrade-k8s sets one (--${component}-image) on every node`,
          got: [...byRepository].map(([repo, names]) => `${repo} (${names.join(", ")})`).join("; "),
          fix: "Pin the same image for every node in the stack file's patches, run up, then rerun; nothing was changed",
        },
        ExitCode.refused,
      );
    }
    const [repository] = byRepository.keys();
    if (repository !== undefined && repository !== TALOS_DEFAULT_IMAGES[component]) {
      flags[component] = repository;
    }
  }
  return { flags, pinned };
}
