// The same resources and invokes the program registers for a stack, with plain SDK calls and no
// validation, patch building or defaults: the floor the program's overhead is measured against.
import * as proxmoxve from "@muhlba91/pulumi-proxmoxve";
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";

/** Registers the bare resources for a generated stack and returns the kubeconfig Output. */
export function baseline(stack: any): pulumi.Output<string> {
  const secrets = new talos.machine.Secrets("bench-secrets", { talosVersion: "v1.13.9" });
  const schematic = new talos.imagefactory.Schematic("bench-schematic", {
    schematic: "customization: {}",
  });
  const urls = talos.imagefactory.getUrlsOutput({
    schematicId: schematic.id,
    talosVersion: "v1.13.9",
    platform: "nocloud",
  });
  const metalUrls = talos.imagefactory.getUrlsOutput({
    schematicId: "vanilla",
    talosVersion: "v1.13.9",
    platform: "metal",
  });
  const provider = new proxmoxve.Provider("bench-pve", { endpoint: stack.proxmox.endpoint });
  const images = new Map<string, proxmoxve.download.File>();
  const client = secrets.clientConfiguration;
  const applies: talos.machine.ConfigurationApply[] = [];
  for (const node of stack.nodes) {
    const address = node.network.addresses[0].split("/")[0];
    const config = talos.machine.getConfigurationOutput({
      clusterName: "bench",
      clusterEndpoint: "https://api.bench.example.net:6443",
      machineSecrets: secrets.machineSecrets,
      machineType: node.role,
      configPatches: (node.platform === "proxmox" ? urls : metalUrls).urls.installer.apply((i) => [
        `machine: {install: {image: ${i}}}`,
      ]),
    }).machineConfiguration;
    const dependsOn: pulumi.Resource[] = [];
    if (node.platform === "proxmox") {
      const host = node.proxmox.host;
      if (!images.has(host)) {
        images.set(
          host,
          new proxmoxve.download.File(
            `bench-image-${host}`,
            { nodeName: host, datastoreId: "local", contentType: "iso", url: urls.urls.diskImage },
            { provider },
          ),
        );
      }
      dependsOn.push(
        new proxmoxve.VmLegacy(
          `bench-${node.name}-vm`,
          {
            nodeName: host,
            vmId: node.proxmox.vmId,
            disks: [{ interface: "scsi0", fileId: images.get(host)!.id }],
          },
          { provider },
        ),
      );
    }
    applies.push(
      new talos.machine.ConfigurationApply(
        `bench-${node.name}-config`,
        { node: address, clientConfiguration: client, machineConfigurationInput: config },
        { dependsOn },
      ),
    );
  }
  const first = stack.nodes[0].network.addresses[0].split("/")[0];
  const bootstrap = new talos.machine.Bootstrap(
    "bench-bootstrap",
    { node: first, clientConfiguration: client },
    { dependsOn: [applies[0]] },
  );
  const addresses = stack.nodes.map((n: any) => n.network.addresses[0].split("/")[0]);
  talos.cluster.getHealthOutput(
    {
      clientConfiguration: client,
      controlPlaneNodes: addresses.slice(0, 3),
      endpoints: addresses.slice(0, 3),
      workerNodes: addresses.slice(3),
    },
    { dependsOn: [bootstrap, ...applies] },
  );
  talos.client.getConfigurationOutput({
    clusterName: "bench",
    clientConfiguration: client,
    endpoints: addresses.slice(0, 3),
  });
  return new talos.cluster.Kubeconfig(
    "bench-kubeconfig",
    { clientConfiguration: client, node: first },
    { dependsOn: [bootstrap] },
  ).kubeconfigRaw;
}
