//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import "strings"

// The SNDRV_PCM_INFO_* flags a driver sets for its stream, which the
// kernel hands back in hw_params.info: how the hardware pointer moves and
// what the application must do for the driver. The layout test checks
// each value against asound.h.
const (
	infoMmap             = 0x00000001
	infoMmapValid        = 0x00000002
	infoDouble           = 0x00000004
	infoBatch            = 0x00000010
	infoSyncApplPtr      = 0x00000020
	infoInterleaved      = 0x00000100
	infoNonInterleaved   = 0x00000200
	infoBlockTransfer    = 0x00010000
	infoResume           = 0x00040000
	infoPause            = 0x00080000
	infoHalfDuplex       = 0x00100000
	infoJointDuplex      = 0x00200000
	infoSyncStart        = 0x00400000
	infoNoPeriodWakeup   = 0x00800000
	infoHasLinkAtime     = 0x01000000
	infoHasLinkAbsAtime  = 0x02000000
	infoHasLinkEstAtime  = 0x04000000
	infoHasLinkSyncAtime = 0x08000000
	infoExplicitSync     = 0x10000000
	infoNoRewinds        = 0x20000000
)

// infoNames are the flags' names as asound.h spells them, without its
// SNDRV_PCM_INFO_ prefix, in the header's order.
var infoNames = []struct {
	bit  uint32
	name string
}{
	{infoMmap, "MMAP"}, {infoMmapValid, "MMAP_VALID"}, {infoDouble, "DOUBLE"}, {infoBatch, "BATCH"},
	{infoSyncApplPtr, "SYNC_APPLPTR"}, {infoInterleaved, "INTERLEAVED"}, {infoNonInterleaved, "NONINTERLEAVED"},
	{infoBlockTransfer, "BLOCK_TRANSFER"}, {infoResume, "RESUME"}, {infoPause, "PAUSE"},
	{infoHalfDuplex, "HALF_DUPLEX"}, {infoJointDuplex, "JOINT_DUPLEX"}, {infoSyncStart, "SYNC_START"},
	{infoNoPeriodWakeup, "NO_PERIOD_WAKEUP"}, {infoHasLinkAtime, "HAS_LINK_ATIME"},
	{infoHasLinkAbsAtime, "HAS_LINK_ABSOLUTE_ATIME"}, {infoHasLinkEstAtime, "HAS_LINK_ESTIMATED_ATIME"},
	{infoHasLinkSyncAtime, "HAS_LINK_SYNCHRONIZED_ATIME"}, {infoExplicitSync, "EXPLICIT_SYNC"},
	{infoNoRewinds, "NO_REWINDS"},
}

// infoFlags names the flags set in info.
func infoFlags(info uint32) []string {
	var names []string
	for _, f := range infoNames {
		if info&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return names
}

// infoString is infoFlags joined with "|", for a line.
func infoString(info uint32) string { return strings.Join(infoFlags(info), "|") }
