// One mock engine for every test: records each registered resource (inputs, which inputs are secret,
// options such as protect/ignoreChanges/dependsOn/deleteBeforeReplace/replaceWith, plugin version)
// and each invoke, answers with
// realistic fake state, and throws on any invoke it does not know so a new call is never silently faked.
import * as pulumi from "@pulumi/pulumi";
import * as resproto from "@pulumi/pulumi/proto/resource_pb";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import { getCallbacks } from "@pulumi/pulumi/runtime/settings";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import { createHash, generateKeyPairSync } from "node:crypto";
import { stringify } from "yaml";

const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const SIG_KEY = "4dabf18193072939515e22adb298388d";

/** Every fake key or token the mocks hand out contains this marker, so a leak is easy to find. */
export const FAKE_SECRET_MARKER = "FAKE-SECRET";

/** Options the program passed when registering a resource. */
export interface RecordedOptions {
  readonly protect: boolean;
  readonly ignoreChanges: string[];
  /** Whether a replacement deletes the old resource before it creates the new one. */
  readonly deleteBeforeReplace: boolean;
  /** URNs of the resources whose replacement replaces this one too. */
  readonly replaceWith: string[];
  readonly additionalSecretOutputs: string[];
  readonly dependencies: string[];
  readonly parent: string;
  readonly provider: string;
  readonly version: string;
  readonly pluginDownloadURL: string;
  /** Names of the resource hooks bound to it, by kind (`beforeCreate`, …); only kinds with hooks. */
  readonly hooks: Record<string, string[]>;
}

/** One resource hook the program registered with the engine. */
export interface RecordedHook {
  readonly name: string;
  /** Whether the engine runs it in previews too. */
  readonly onDryRun: boolean;
  /** The token the engine calls it back with. */
  readonly token: string;
}

/** What the engine hands a resource hook (see the engine's Deployment.RunHooks). */
export interface HookCall {
  readonly urn: string;
  readonly name: string;
  readonly type: string;
  readonly newInputs?: Record<string, unknown>;
}

/** One registered resource. */
export interface RecordedResource {
  readonly type: string;
  readonly name: string;
  readonly urn: string;
  readonly custom: boolean;
  /** Inputs with secret markers removed. */
  readonly inputs: Record<string, any>;
  /** Dotted paths of inputs that arrived as secrets (`machineConfigurationInput`, `clientConfiguration.clientKey`). */
  readonly secretPaths: string[];
  readonly options: RecordedOptions;
}

/** One invoke call. */
export interface RecordedInvoke {
  readonly token: string;
  readonly inputs: Record<string, any>;
  readonly secretPaths: string[];
  readonly version: string;
  readonly pluginDownloadURL: string;
}

/** Strips Pulumi's secret markers from deserialized mock inputs, noting where they were. */
export function unwrapSecrets(value: unknown, path = "", secretPaths: string[] = []): any {
  if (Array.isArray(value))
    return value.map((v, i) => unwrapSecrets(v, path ? `${path}[${i}]` : `[${i}]`, secretPaths));
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    if (record[SIG_KEY] === SECRET_SIG) {
      secretPaths.push(path);
      return unwrapSecrets(record.value, path, secretPaths);
    }
    return Object.fromEntries(
      Object.entries(record).map(([k, v]) => [
        k,
        unwrapSecrets(v, path ? `${path}.${k}` : k, secretPaths),
      ]),
    );
  }
  return value;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const pem = (what: string) =>
  `-----BEGIN ${what}-----\n${Buffer.from(what).toString("base64")}\n-----END ${what}-----\n`;
const fakeKey = (what: string) => `${FAKE_SECRET_MARKER}-${what}`;

/**
 * A real (throwaway) service-account signing key, as Talos makes one for new contracts (ECDSA P-256),
 * so code deriving its public half works; the marker line before the PEM keeps a leak easy to find.
 */
const SERVICE_ACCOUNT_KEY = `${fakeKey("sa-key")}\n${generateKeyPairSync("ec", {
  namedCurve: "P-256",
})
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString()}`;

/** Behaviour a test can switch on. */
export interface MockBehaviour {
  /** Make the health check fail with this message. */
  healthError?: string;
  /** Pad every generated machine config with this many bytes (to exceed user-data limits). */
  configPadding?: number;
  /** Outputs of stacks read through a StackReference, by stack name. */
  stackOutputs?: Record<string, Record<string, unknown>>;
  /**
   * State a provider reports beyond the inputs, by resource name: where the state keeps what an
   * ignored change left (an OpenStack instance still on its old flavor).
   */
  recordedState?: Record<string, Record<string, unknown>>;
  /** Objects of GCS buckets (`<bucket>/<object>` → content) that getBucketObjectContent reads. */
  bucketObjects?: Record<string, string>;
}

/** The recording mock engine. */
export class Recorder {
  readonly resources: RecordedResource[] = [];
  readonly invokes: RecordedInvoke[] = [];
  readonly hooks: RecordedHook[] = [];
  behaviour: MockBehaviour = {};
  private readonly pendingOptions = new Map<string, RecordedOptions>();
  private inFlight = 0;

  /** The Pulumi mocks, to pass to `setMocks`. */
  readonly mocks: pulumi.runtime.Mocks = {
    newResource: (args) => this.newResource(args),
    call: (args) => this.call(args),
  };

  /** Resources of one type token. */
  ofType(type: string): RecordedResource[] {
    return this.resources.filter((r) => r.type === type);
  }

  /** The one resource with this name. */
  named(name: string): RecordedResource {
    const found = this.resources.filter((r) => r.name === name);
    if (found.length !== 1)
      throw new Error(
        `expected one resource named ${name}, found ${found.length}: ${this.resources.map((r) => r.name).join(", ")}`,
      );
    return found[0];
  }

  /** Invokes of one token. */
  invokesOf(token: string): RecordedInvoke[] {
    return this.invokes.filter((i) => i.token === token);
  }

  /**
   * Runs the hooks a resource's registration bound for one kind (`beforeCreate`, …) in order, as the
   * engine does before that step; resolves with the first error (which fails the step), if any.
   */
  async runHooks(
    resource: RecordedResource,
    kind: string,
    call: Omit<HookCall, "urn" | "name" | "type">,
  ): Promise<string | undefined> {
    for (const name of resource.options.hooks[kind] ?? []) {
      const error = await this.runHook(name, {
        ...call,
        urn: resource.urn,
        name: resource.name,
        type: resource.type,
      });
      if (error !== undefined) return error;
    }
    return undefined;
  }

  /**
   * Runs a registered hook as the engine does: through the program's callback server, with a
   * serialized request. Resolves with the error the hook reported (which fails the step), if any.
   */
  async runHook(name: string, call: HookCall): Promise<string | undefined> {
    const hook = this.hooks.find((h) => h.name === name);
    if (!hook)
      throw new Error(`no hook named ${name}: ${this.hooks.map((h) => h.name).join(", ")}`);
    const request = new resproto.ResourceHookRequest();
    request.setUrn(call.urn);
    request.setName(call.name);
    request.setType(call.type);
    if (call.newInputs) request.setNewInputs(Struct.fromJavaScript(call.newInputs as any));
    // The callback server is the SDK's (internal): the engine reaches it over gRPC with this token.
    const callbacks = getCallbacks() as any;
    const callback = callbacks._callbacks.get(hook.token) as (bytes: Uint8Array) => Promise<any>;
    const response = await callback(request.serializeBinary());
    return response.getError() || undefined;
  }

  /** Resolves once no registration or invoke has been in flight for a few turns of the event loop. */
  async settled(): Promise<void> {
    for (let quiet = 0; quiet < 5;) {
      await new Promise((resolve) => setImmediate(resolve));
      quiet = this.inFlight === 0 ? quiet + 1 : 0;
    }
  }

  /** Hooks the mock monitor so resource options and invoke plugin versions are recorded too. */
  install(): void {
    // What registrations and reads (StackReferences) both carry.
    const commonOptions = (req: any) => ({
      additionalSecretOutputs: req.getAdditionalsecretoutputsList(),
      dependencies: req.getDependenciesList(),
      parent: req.getParent(),
      provider: req.getProvider(),
      version: req.getVersion(),
      pluginDownloadURL: req.getPlugindownloadurl(),
    });
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const recorder = this;
    const proto = MockMonitor.prototype as any;
    if (!proto.__recorderOriginal) {
      proto.__recorderOriginal = {
        registerResource: proto.registerResource,
        readResource: proto.readResource,
        invoke: proto.invoke,
      };
    }
    const original = proto.__recorderOriginal;
    proto.registerResource = function (req: any, callback: (err: any, resp: any) => void) {
      recorder.inFlight++;
      recorder.pendingOptions.set(`${req.getType()}::${req.getName()}`, {
        ...commonOptions(req),
        protect: req.getProtect?.() ?? false,
        ignoreChanges: req.getIgnorechangesList(),
        deleteBeforeReplace: req.getDeletebeforereplace(),
        replaceWith: req.getReplaceWithList(),
        hooks: hookNames(req.getHooks?.()),
      });
      return original.registerResource.call(this, req, (err: any, resp: any) => {
        if (!err) recorder.attachUrn(req.getType(), req.getName(), resp.getUrn());
        recorder.inFlight--;
        callback(err, resp);
      });
    };
    // Reads (StackReferences) carry options too: at least their parent and provider.
    proto.readResource = function (req: any, callback: (err: any, resp: any) => void) {
      recorder.inFlight++;
      recorder.pendingOptions.set(`${req.getType()}::${req.getName()}`, {
        ...commonOptions(req),
        protect: false,
        ignoreChanges: [],
        deleteBeforeReplace: false,
        replaceWith: [],
        hooks: {},
      });
      return original.readResource.call(this, req, (err: any, resp: any) => {
        if (!err) recorder.attachUrn(req.getType(), req.getName(), resp.getUrn());
        recorder.inFlight--;
        callback(err, resp);
      });
    };
    // The mock monitor has no hook registry: record the hook as the engine's registry would keep it.
    proto.registerResourceHook = function (req: any, callback: (err: any, resp: any) => void) {
      recorder.hooks.push({
        name: req.getName(),
        onDryRun: req.getOnDryRun(),
        token: req.getCallback().getToken(),
      });
      callback(null, {});
    };
    proto.invoke = function (req: any, callback: (err: any, resp: any) => void) {
      recorder.inFlight++;
      // MockMonitor calls mocks.call synchronously from here, so the queue stays in step.
      if (req.getTok() !== "pulumi:pulumi:getResource") {
        recorder.pendingInvokeVersions.push({
          version: req.getVersion(),
          pluginDownloadURL: req.getPlugindownloadurl(),
        });
      }
      return original.invoke.call(this, req, (err: any, resp: any) => {
        recorder.inFlight--;
        callback(err, resp);
      });
    };
  }

  private readonly pendingInvokeVersions: { version: string; pluginDownloadURL: string }[] = [];
  private readonly urns = new Map<string, string>();

  private attachUrn(type: string, name: string, urn: string): void {
    this.urns.set(`${type}::${name}`, urn);
    const index = this.resources.findIndex((r) => r.type === type && r.name === name);
    if (index >= 0) this.resources[index] = { ...this.resources[index], urn };
  }

  private newResource(args: pulumi.runtime.MockResourceArgs): {
    id: string | undefined;
    state: Record<string, any>;
  } {
    const secretPaths: string[] = [];
    const inputs = unwrapSecrets(args.inputs, "", secretPaths);
    const key = `${args.type}::${args.name}`;
    const options = this.pendingOptions.get(key) ?? ({} as RecordedOptions);
    this.resources.push({
      type: args.type,
      name: args.name,
      urn: this.urns.get(key) ?? "",
      custom: args.custom ?? true,
      inputs,
      secretPaths,
      options,
    });
    const { id, state } =
      args.type === "pulumi:pulumi:StackReference"
        ? {
            id: inputs.name,
            state: {
              name: inputs.name,
              outputs: stackOutputs(this.behaviour, inputs.name),
              secretOutputNames: [],
            },
          }
        : fakeResource(args.type, args.name, inputs);
    const recorded = this.behaviour.recordedState?.[args.name] ?? {};
    return { id: args.custom === false ? undefined : id, state: { ...state, ...recorded } };
  }

  private call(args: pulumi.runtime.MockCallArgs): Record<string, any> {
    const secretPaths: string[] = [];
    const inputs = unwrapSecrets(args.inputs, "", secretPaths);
    const versions = this.pendingInvokeVersions.shift() ?? { version: "", pluginDownloadURL: "" };
    this.invokes.push({ token: args.token, inputs, secretPaths, ...versions });
    return fakeInvoke(args.token, inputs, this.behaviour);
  }
}

/**
 * A referenced stack's outputs. A stack the test did not list does not exist, and the engine fails the
 * read as its backend client does: `unknown stack "<name>"`; the running stack exists, and unless
 * listed it was never deployed: no outputs.
 */
function stackOutputs(behaviour: MockBehaviour, name: string): Record<string, unknown> {
  const outputs = behaviour.stackOutputs?.[name];
  const own = `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`;
  if (outputs === undefined && name === own) return {};
  if (outputs === undefined) throw new Error(`unknown stack "${name}"`);
  return outputs;
}

/** The hook names of a registration's hook binding, by kind; kinds without hooks left out. */
function hookNames(binding: any): Record<string, string[]> {
  if (!binding) return {};
  const lists: Record<string, string[]> = {
    beforeCreate: binding.getBeforeCreateList(),
    afterCreate: binding.getAfterCreateList(),
    beforeUpdate: binding.getBeforeUpdateList(),
    afterUpdate: binding.getAfterUpdateList(),
    beforeDelete: binding.getBeforeDeleteList(),
    afterDelete: binding.getAfterDeleteList(),
  };
  return Object.fromEntries(Object.entries(lists).filter(([, names]) => names.length > 0));
}

/** Fake provider state: inputs plus the outputs a real provider would compute. */
function fakeResource(
  type: string,
  name: string,
  inputs: Record<string, any>,
): { id: string; state: Record<string, any> } {
  switch (type) {
    case "talos:machine/secrets:Secrets": {
      // A rotated-to generation (`<cluster>-talos-ca-1`) has CAs of its own, told apart by name.
      const own = /-ca-\d+$/.test(name) ? ` ${name}` : "";
      const cert = (what: string) => ({
        cert: pem(`${what}${own} CERTIFICATE`),
        key: fakeKey(`${what}${own.replace(" ", "-")}-key`),
      });
      return {
        id: `${name}-id`,
        state: {
          ...inputs,
          machineSecrets: {
            certs: {
              etcd: cert("etcd"),
              k8s: cert("k8s"),
              k8sAggregator: cert("k8s-aggregator"),
              k8sServiceaccount: { key: SERVICE_ACCOUNT_KEY },
              os: cert("os"),
            },
            cluster: { id: "cluster-id", secret: fakeKey("cluster-secret") },
            secrets: {
              bootstrapToken: fakeKey("bootstrap-token"),
              secretboxEncryptionSecret: fakeKey("secretbox"),
            },
            trustdinfo: { token: fakeKey("trustd-token") },
          },
          clientConfiguration: {
            caCertificate: own ? pem(`os${own} CERTIFICATE`) : pem("TALOS CA"),
            clientCertificate: pem(`TALOS CLIENT${own}`),
            clientKey: fakeKey(`talos-client-key${own.replace(" ", "-")}`),
          },
        },
      };
    }
    case "talos:machine/configurationApply:ConfigurationApply": {
      const config = `${inputs.machineConfigurationInput ?? ""}${(inputs.configPatches ?? []).join("\n---\n")}`;
      return {
        id: `${name}-id`,
        state: {
          ...inputs,
          machineConfiguration: config,
          machineConfigurationHash: sha256(config),
          resolvedApplyMode: inputs.applyMode ?? "auto",
        },
      };
    }
    case "talos:cluster/kubeconfig:Kubeconfig":
      return {
        id: `${name}-id`,
        state: {
          ...inputs,
          kubeconfigRaw: stringify({
            apiVersion: "v1",
            kind: "Config",
            clusters: [{ name: "cluster", cluster: { server: "https://cluster:6443" } }],
            users: [{ name: "admin", user: { "client-key-data": fakeKey("kube-admin-key") } }],
          }),
          kubernetesClientConfiguration: {
            host: "https://cluster:6443",
            // The provider hands these out base64-encoded.
            caCertificate: Buffer.from(pem("K8S CA")).toString("base64"),
            clientCertificate: Buffer.from(pem("K8S ADMIN")).toString("base64"),
            clientKey: fakeKey("kube-admin-key"),
          },
        },
      };
    case "talos:imageFactory/schematic:Schematic":
      return { id: sha256(inputs.schematic ?? ""), state: inputs };
    case "proxmoxve:download/file:File":
      return {
        id: `${inputs.datastoreId}:${inputs.contentType}/${inputs.fileName}`,
        state: { ...inputs, size: 1_300_000_000 },
      };
    case "proxmoxve:index/vmLegacy:VmLegacy":
      return { id: String(inputs.vmId), state: inputs };
    case "oci:Core/instance:Instance":
      return {
        id: `ocid1.instance.oc1..${name}`,
        state: {
          ...inputs,
          privateIp: inputs.createVnicDetails?.privateIp ?? `198.51.100.${octet(name)}`,
          publicIp:
            inputs.createVnicDetails?.assignPublicIp === "true" ? `203.0.113.${octet(name)}` : "",
          state: "RUNNING",
        },
      };
    case "oci:Core/image:Image":
      return { id: `ocid1.image.oc1..${name}`, state: inputs };
    case "oci:Core/networkSecurityGroup:NetworkSecurityGroup":
      return { id: `ocid1.networksecuritygroup.oc1..${name}`, state: inputs };
    case "openstack:networking/port:Port":
      return {
        id: `port-${name}`,
        state: {
          ...inputs,
          allFixedIps: inputs.fixedIps
            ? inputs.fixedIps.map((ip: any) => ip.ipAddress)
            : [`192.0.2.${octet(name)}`],
        },
      };
    case "gcp:kms/keyRing:KeyRing":
      return {
        id: `projects/${inputs.project}/locations/${inputs.location}/keyRings/${inputs.name}`,
        state: inputs,
      };
    case "gcp:kms/cryptoKey:CryptoKey":
      return { id: `${inputs.keyRing}/cryptoKeys/${inputs.name}`, state: inputs };
    case "gcp:serviceaccount/account:Account": {
      const email = `${inputs.accountId}@${inputs.project}.iam.gserviceaccount.com`;
      return {
        id: email,
        state: { ...inputs, email, name: `projects/${inputs.project}/serviceAccounts/${email}` },
      };
    }
    case "gcp:serviceaccount/key:Key": {
      const file = JSON.stringify({
        type: "service_account",
        private_key: fakeKey("sa-private-key"),
      });
      return {
        id: `${name}-id`,
        state: { ...inputs, privateKey: Buffer.from(file).toString("base64") },
      };
    }
    case "gcp:storage/hmacKey:HmacKey":
      // Cloud Storage's HMAC key: a 61-character access ID for a service account, a 40-character secret.
      return {
        id: `${name}-id`,
        state: {
          ...inputs,
          accessId: "GOOG1E" + "A".repeat(55),
          secret: fakeKey("hmac-secret"),
        },
      };
    case "gcp:iam/workloadIdentityPool:WorkloadIdentityPool": {
      const poolName = `projects/123456789012/locations/global/workloadIdentityPools/${inputs.workloadIdentityPoolId}`;
      return { id: poolName, state: { ...inputs, name: poolName } };
    }
    case "gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider": {
      const providerName = `projects/123456789012/locations/global/workloadIdentityPools/${inputs.workloadIdentityPoolId}/providers/${inputs.workloadIdentityPoolProviderId}`;
      return { id: providerName, state: { ...inputs, name: providerName } };
    }
    case "gcp:storage/bucket:Bucket":
      return { id: inputs.name, state: { ...inputs, url: `gs://${inputs.name}` } };
    case "openstack:images/image:Image":
    case "openstack:blockstorage/volume:Volume":
    case "openstack:compute/instance:Instance":
    case "openstack:networking/secGroup:SecGroup":
      return { id: `${type.split(":").pop()!.toLowerCase()}-${name}`, state: inputs };
    default:
      return { id: `${name}-id`, state: inputs };
  }
}

/** A stable last octet (10-249) for a resource name, for fake addresses. */
function octet(name: string): number {
  return 10 + (parseInt(sha256(name).slice(0, 4), 16) % 240);
}

/** Fake invoke results; unknown tokens throw. */
function fakeInvoke(
  token: string,
  inputs: Record<string, any>,
  behaviour: MockBehaviour,
): Record<string, any> {
  switch (token) {
    case "talos:machine/getConfiguration:getConfiguration": {
      const base = stringify({
        version: "v1alpha1",
        machine: {
          type: inputs.machineType,
          token: fakeKey("machine-token"),
          ca: { crt: pem("OS CA"), key: fakeKey("os-ca-key") },
        },
        cluster: {
          clusterName: inputs.clusterName,
          controlPlane: { endpoint: inputs.clusterEndpoint },
        },
      });
      // Not a real strategic merge: the patches follow the base document so tests can see what went in.
      const padding = behaviour.configPadding ? [`# ${"x".repeat(behaviour.configPadding)}\n`] : [];
      const machineConfiguration = [base, ...(inputs.configPatches ?? []), ...padding].join(
        "---\n",
      );
      return { ...inputs, id: inputs.clusterName, machineConfiguration };
    }
    case "talos:client/getConfiguration:getConfiguration":
      return {
        ...inputs,
        id: inputs.clusterName,
        talosConfig: stringify({
          context: inputs.clusterName,
          contexts: {
            [inputs.clusterName]: {
              endpoints: inputs.endpoints,
              nodes: inputs.nodes,
              // As the provider writes it: the client configuration's CA, base64-encoded.
              ca: Buffer.from(inputs.clientConfiguration?.caCertificate ?? "CA").toString("base64"),
              crt: "Q1JU",
              key: fakeKey("talosconfig-key"),
            },
          },
        }),
      };
    case "talos:cluster/getHealth:getHealth":
      if (behaviour.healthError) throw new Error(behaviour.healthError);
      return { ...inputs, id: "health" };
    case "talos:imageFactory/getUrls:getUrls": {
      const { schematicId: id, talosVersion: v, platform: p, architecture: a = "amd64" } = inputs;
      const image = `https://factory.talos.dev/image/${id}/${v}`;
      return {
        ...inputs,
        id: `${id}-${v}-${p}`,
        urls: {
          installer: `factory.talos.dev/${p}-installer/${id}:${v}`,
          installerSecureboot: `factory.talos.dev/${p}-installer-secureboot/${id}:${v}`,
          diskImage: `${image}/${p}-${a}.raw.xz`,
          diskImageSecureboot: `${image}/${p}-${a}-secureboot.raw.xz`,
          iso: `${image}/${p}-${a}.iso`,
          isoSecureboot: `${image}/${p}-${a}-secureboot.iso`,
          kernel: `${image}/kernel-${a}`,
          kernelCommandLine: `${image}/cmdline-${p}-${a}`,
          initramfs: `${image}/initramfs-${a}.xz`,
          pxe: `https://pxe.factory.talos.dev/pxe/${id}/${v}/${p}-${a}`,
          uki: `${image}/${p}-${a}-uki.efi`,
        },
      };
    }
    case "oci:Identity/getAvailabilityDomains:getAvailabilityDomains":
      return {
        ...inputs,
        id: inputs.compartmentId,
        availabilityDomains: [1, 2, 3].map((n) => ({
          id: `ad-${n}`,
          name: `Uocm:EU-FRANKFURT-1-AD-${n}`,
          compartmentId: inputs.compartmentId,
        })),
      };
    case "oci:Core/getComputeGlobalImageCapabilitySchemas:getComputeGlobalImageCapabilitySchemas":
      return {
        ...inputs,
        id: "global-image-capability-schemas",
        computeGlobalImageCapabilitySchemas: [
          {
            id: "ocid1.computeglobalimgcapschema.oc1..example",
            compartmentId: "",
            currentVersionName: "2024-03-01",
            displayName: "OCI.ComputeGlobalImageCapabilitySchema",
            definedTags: {},
            freeformTags: {},
            timeCreated: "2024-03-01T00:00:00Z",
          },
        ],
      };
    case "oci:Core/getSubnet:getSubnet":
      return {
        ...inputs,
        id: inputs.subnetId,
        vcnId: "ocid1.vcn.oc1.eu-frankfurt-1.example",
        cidrBlock: "198.51.100.0/24",
      };
    case "openstack:images/getImage:getImage":
      return { ...inputs, id: `glance-${inputs.name}` };
    case "gcp:storage/getBucketObjectContent:getBucketObjectContent": {
      const content = behaviour.bucketObjects?.[`${inputs.bucket}/${inputs.name}`];
      // The provider fails the read of a missing object (googleapi: Error 404).
      if (content === undefined)
        throw new Error(`googleapi: Error 404: No such object: ${inputs.bucket}/${inputs.name}`);
      return { ...inputs, content, contentType: "application/json" };
    }
    default:
      throw new Error(
        `the mocks do not know invoke ${token}; add a realistic fake to test/mocks.ts`,
      );
  }
}
