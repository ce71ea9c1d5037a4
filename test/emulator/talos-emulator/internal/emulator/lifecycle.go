package emulator

import (
	"context"
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/api/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// lifecycleService is the LifecycleService Talos 1.13 added: talosctl 1.13 upgrades nodes that run
// 1.13 or newer through it (image pull, install, then a separate reboot).
type lifecycleService struct {
	machine.UnimplementedLifecycleServiceServer

	node *Node
}

// Upgrade runs the installer for the image: progress messages, then its exit code. It does not
// reboot (talosctl reboots next) and, unlike the legacy API, does not check etcd.
func (s *lifecycleService) Upgrade(req *machine.LifecycleServiceUpgradeRequest, srv grpc.ServerStreamingServer[machine.LifecycleServiceUpgradeResponse]) error {
	n := s.node
	image := req.GetSource().GetImageName()

	n.mu.Lock()
	installed := n.installed && n.phase == PhaseRunning
	n.mu.Unlock()

	if !installed {
		return status.Error(codes.FailedPrecondition, "machine is not installed")
	}

	if image == "" {
		return status.Error(codes.InvalidArgument, "installer image name is required")
	}

	tag, err := imageVersion(image)
	if err != nil {
		return status.Error(codes.Internal, fmt.Sprintf("upgrade failed: %v", err))
	}

	if err = n.tryBusy("upgrade"); err != nil {
		return status.Error(codes.FailedPrecondition, "another installation/upgrade is already in progress")
	}
	defer n.doneBusy()

	send := func(progress *machine.LifecycleServiceInstallProgress) error {
		return srv.Send(&machine.LifecycleServiceUpgradeResponse{Progress: progress})
	}
	message := func(text string) error {
		return send(&machine.LifecycleServiceInstallProgress{Response: &machine.LifecycleServiceInstallProgress_Message{Message: text}})
	}
	exit := func(code int32) error {
		return send(&machine.LifecycleServiceInstallProgress{Response: &machine.LifecycleServiceInstallProgress_ExitCode{ExitCode: code}})
	}

	if err = message(fmt.Sprintf("running installer %s on /dev/sda", image)); err != nil {
		return err
	}

	if err = sleepCtx(srv.Context(), n.emu.opts.Timings.Install); err != nil {
		return err
	}

	if n.Faults().UpgradeFails {
		if err = message("error: failed to install " + image + ": emulated fault: installer failed"); err != nil {
			return err
		}

		return exit(1)
	}

	n.installVersion(tag, image)

	if err = message(fmt.Sprintf("installed Talos %s; it runs after the next reboot", tag)); err != nil {
		return err
	}

	return exit(0)
}

// imageService is the ImageService talosctl 1.13 pulls the installer image with before upgrading.
type imageService struct {
	machine.UnimplementedImageServiceServer

	node *Node
}

// Pull "pulls" an image: the reference must carry a Talos version tag (the emulator reads the
// version from it later).
func (s *imageService) Pull(req *machine.ImageServicePullRequest, srv grpc.ServerStreamingServer[machine.ImageServicePullResponse]) error {
	if _, err := imageVersion(req.GetImageRef()); err != nil {
		return status.Errorf(codes.NotFound, "failed to pull image %q: %v", req.GetImageRef(), err)
	}

	return srv.Send(&machine.ImageServicePullResponse{Response: &machine.ImageServicePullResponse_Name{Name: req.GetImageRef()}})
}

// storageService answers the disk listing the provider probes maintenance mode with.
type storageService struct {
	storage.UnimplementedStorageServiceServer

	node *Node
}

// Disks lists one system disk.
func (s *storageService) Disks(context.Context, *emptypb.Empty) (*storage.DisksResponse, error) {
	return &storage.DisksResponse{Messages: []*storage.Disks{{
		Disks: []*storage.Disk{{
			Size:       200 << 30,
			Model:      "Talos emulator disk",
			DeviceName: "/dev/sda",
			Type:       storage.Disk_HDD,
			SystemDisk: s.node.view().phase == PhaseRunning,
		}},
	}}}, nil
}

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()

	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
