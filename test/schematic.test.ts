// The schematic IDs `validate` computes offline are the Image Factory's: the SHA-256 of the
// schematic's canonical YAML (siderolabs/image-factory pkg/schematic, its own test vectors), and the
// ISO URL is the Factory's `GET /image/:schematic/:version/metal-<arch>.iso`.
import { strict as assert } from "node:assert";
import type { ImageFactorySpec } from "../components/spec/types";
import { metalIsoUrl, schematicId, VANILLA_SCHEMATIC_ID } from "../components/talos/schematic";

const NONE: ImageFactorySpec = {
  extensions: [],
  platformExtensions: {},
  architectureExtensions: {},
  extraKernelArgs: [],
};

describe("Image Factory schematic IDs, offline", () => {
  it("is the vanilla schematic, or the configured one, when nothing is customised", () => {
    assert.equal(schematicId(NONE, "baremetal", "amd64"), VANILLA_SCHEMATIC_ID);
    assert.equal(
      VANILLA_SCHEMATIC_ID,
      "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba",
    );
    assert.equal(schematicId({ ...NONE, schematicId: "abc" }, "baremetal", "amd64"), "abc");
  });

  it("matches the Factory's IDs for kernel arguments and extensions", () => {
    // image-factory pkg/schematic/schematic_test.go, "config1".
    assert.equal(
      schematicId({ ...NONE, extraKernelArgs: ["noapic", "nolapic"] }, "baremetal", "amd64"),
      "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c",
    );
    // The Factory's well-known schematics: the QEMU guest agent; iSCSI and util-linux tools.
    assert.equal(
      schematicId(
        { ...NONE, platformExtensions: { baremetal: ["siderolabs/qemu-guest-agent"] } },
        "baremetal",
        "amd64",
      ),
      "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515",
    );
    assert.equal(
      schematicId(
        { ...NONE, extensions: ["siderolabs/util-linux-tools", "siderolabs/iscsi-tools"] },
        "baremetal",
        "amd64",
      ),
      "613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245",
    );
  });

  it("takes each architecture's and platform's own extensions", () => {
    const factory: ImageFactorySpec = {
      ...NONE,
      platformExtensions: { proxmox: ["siderolabs/qemu-guest-agent"] },
      architectureExtensions: { amd64: ["siderolabs/intel-ucode"] },
    };
    assert.notEqual(schematicId(factory, "baremetal", "amd64"), VANILLA_SCHEMATIC_ID);
    assert.equal(schematicId(factory, "baremetal", "arm64"), VANILLA_SCHEMATIC_ID);
  });

  it("gives no ID it cannot be sure of: a value the Factory's YAML would quote", () => {
    for (const arg of ["true", "1", "@x", "a b", "x: y", "-v"]) {
      assert.equal(
        schematicId({ ...NONE, extraKernelArgs: [arg] }, "baremetal", "amd64"),
        undefined,
      );
    }
    assert.ok(
      schematicId({ ...NONE, extraKernelArgs: ["console=ttyS0,115200"] }, "baremetal", "amd64"),
    );
  });

  it("names the Factory's metal ISO", () => {
    assert.equal(
      metalIsoUrl(VANILLA_SCHEMATIC_ID, "v1.13.9", "arm64"),
      `https://factory.talos.dev/image/${VANILLA_SCHEMATIC_ID}/v1.13.9/metal-arm64.iso`,
    );
  });
});
