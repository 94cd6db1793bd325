//go:build linux && (amd64 || arm64 || arm || 386) && !vm

package alsa

import (
	"runtime"
	"testing"
	"unsafe"
)

// layoutChecks pairs a C expression over <sound/asound.h> with the value
// the Go transcription gives it. Every struct this package passes to the
// kernel is here with its size and the offset of every named member.
func layoutChecks() []struct {
	c     string
	goVal uintptr
} {
	var hp hwParams
	var sw swParams
	var ms mmapStatus
	var mc mmapControl
	var sp syncPtr
	var st pcmStatus
	var xf xferi
	var pi pcmInfo
	var ci ctlCardInfo
	var iv interval
	type check = struct {
		c     string
		goVal uintptr
	}
	checks := []check{
		// The C side must see the time64 records on 32-bit: built with
		// _TIME_BITS=64 (cTargets), time_t is 8 bytes everywhere.
		{"sizeof(time_t)", 8},
		{"sizeof(struct snd_interval)", unsafe.Sizeof(iv)},
		{"sizeof(struct snd_mask)", unsafe.Sizeof(mask{})},

		{"sizeof(struct snd_pcm_hw_params)", unsafe.Sizeof(hp)},
		{"offsetof(struct snd_pcm_hw_params, masks)", unsafe.Offsetof(hp.Masks)},
		{"offsetof(struct snd_pcm_hw_params, mres)", unsafe.Offsetof(hp.Mres)},
		{"offsetof(struct snd_pcm_hw_params, intervals)", unsafe.Offsetof(hp.Intervals)},
		{"offsetof(struct snd_pcm_hw_params, ires)", unsafe.Offsetof(hp.Ires)},
		{"offsetof(struct snd_pcm_hw_params, rmask)", unsafe.Offsetof(hp.Rmask)},
		{"offsetof(struct snd_pcm_hw_params, cmask)", unsafe.Offsetof(hp.Cmask)},
		{"offsetof(struct snd_pcm_hw_params, info)", unsafe.Offsetof(hp.Info)},
		{"offsetof(struct snd_pcm_hw_params, msbits)", unsafe.Offsetof(hp.Msbits)},
		{"offsetof(struct snd_pcm_hw_params, rate_num)", unsafe.Offsetof(hp.RateNum)},
		{"offsetof(struct snd_pcm_hw_params, rate_den)", unsafe.Offsetof(hp.RateDen)},
		{"offsetof(struct snd_pcm_hw_params, fifo_size)", unsafe.Offsetof(hp.FifoSize)},
		{"offsetof(struct snd_pcm_hw_params, reserved)", unsafe.Offsetof(hp.Reserved)},

		{"sizeof(struct snd_pcm_sw_params)", unsafe.Sizeof(sw)},
		{"offsetof(struct snd_pcm_sw_params, period_step)", unsafe.Offsetof(sw.PeriodStep)},
		{"offsetof(struct snd_pcm_sw_params, sleep_min)", unsafe.Offsetof(sw.SleepMin)},
		{"offsetof(struct snd_pcm_sw_params, avail_min)", unsafe.Offsetof(sw.AvailMin)},
		{"offsetof(struct snd_pcm_sw_params, xfer_align)", unsafe.Offsetof(sw.XferAlign)},
		{"offsetof(struct snd_pcm_sw_params, start_threshold)", unsafe.Offsetof(sw.StartThreshold)},
		{"offsetof(struct snd_pcm_sw_params, stop_threshold)", unsafe.Offsetof(sw.StopThreshold)},
		{"offsetof(struct snd_pcm_sw_params, silence_threshold)", unsafe.Offsetof(sw.SilenceThreshold)},
		{"offsetof(struct snd_pcm_sw_params, silence_size)", unsafe.Offsetof(sw.SilenceSize)},
		{"offsetof(struct snd_pcm_sw_params, boundary)", unsafe.Offsetof(sw.Boundary)},
		{"offsetof(struct snd_pcm_sw_params, proto)", unsafe.Offsetof(sw.Proto)},
		{"offsetof(struct snd_pcm_sw_params, tstamp_type)", unsafe.Offsetof(sw.TstampType)},
		{"offsetof(struct snd_pcm_sw_params, reserved)", unsafe.Offsetof(sw.Reserved)},

		{"sizeof(struct snd_pcm_mmap_status)", unsafe.Sizeof(ms)},
		{"offsetof(struct snd_pcm_mmap_status, hw_ptr)", unsafe.Offsetof(ms.HWPtr)},
		{"offsetof(struct snd_pcm_mmap_status, tstamp)", unsafe.Offsetof(ms.Tstamp)},
		{"offsetof(struct snd_pcm_mmap_status, suspended_state)", unsafe.Offsetof(ms.SuspendedState)},
		{"offsetof(struct snd_pcm_mmap_status, audio_tstamp)", unsafe.Offsetof(ms.AudioTstamp)},
		{"sizeof(struct snd_pcm_mmap_control)", unsafe.Sizeof(mc)},
		{"offsetof(struct snd_pcm_mmap_control, avail_min)", unsafe.Offsetof(mc.AvailMin)},
		{"sizeof(snd_pcm_uframes_t)", unsafe.Sizeof(uframes(0))},
		{"sizeof(snd_pcm_sframes_t)", unsafe.Sizeof(sframes(0))},

		{"sizeof(struct snd_pcm_sync_ptr)", unsafe.Sizeof(sp)},
		{"offsetof(struct snd_pcm_sync_ptr, s)", unsafe.Offsetof(sp.Status)},
		{"offsetof(struct snd_pcm_sync_ptr, c)", unsafe.Offsetof(sp.Control)},

		{"sizeof(struct snd_pcm_status)", unsafe.Sizeof(st)},
		{"offsetof(struct snd_pcm_status, trigger_tstamp)", unsafe.Offsetof(st.TriggerTstamp)},
		{"offsetof(struct snd_pcm_status, tstamp)", unsafe.Offsetof(st.Tstamp)},
		{"offsetof(struct snd_pcm_status, appl_ptr)", unsafe.Offsetof(st.ApplPtr)},
		{"offsetof(struct snd_pcm_status, hw_ptr)", unsafe.Offsetof(st.HWPtr)},
		{"offsetof(struct snd_pcm_status, delay)", unsafe.Offsetof(st.Delay)},
		{"offsetof(struct snd_pcm_status, avail)", unsafe.Offsetof(st.Avail)},
		{"offsetof(struct snd_pcm_status, avail_max)", unsafe.Offsetof(st.AvailMax)},
		{"offsetof(struct snd_pcm_status, overrange)", unsafe.Offsetof(st.Overrange)},
		{"offsetof(struct snd_pcm_status, suspended_state)", unsafe.Offsetof(st.SuspendedState)},
		{"offsetof(struct snd_pcm_status, audio_tstamp_data)", unsafe.Offsetof(st.AudioTstampData)},
		{"offsetof(struct snd_pcm_status, audio_tstamp)", unsafe.Offsetof(st.AudioTstamp)},
		{"offsetof(struct snd_pcm_status, driver_tstamp)", unsafe.Offsetof(st.DriverTstamp)},
		{"offsetof(struct snd_pcm_status, audio_tstamp_accuracy)", unsafe.Offsetof(st.AudioTstampAccur)},
		{"offsetof(struct snd_pcm_status, reserved)", unsafe.Offsetof(st.Reserved)},

		{"sizeof(struct snd_xferi)", unsafe.Sizeof(xf)},
		{"offsetof(struct snd_xferi, buf)", unsafe.Offsetof(xf.Buf)},
		{"offsetof(struct snd_xferi, frames)", unsafe.Offsetof(xf.Frames)},

		{"sizeof(struct snd_pcm_info)", unsafe.Sizeof(pi)},
		{"offsetof(struct snd_pcm_info, stream)", unsafe.Offsetof(pi.Stream)},
		{"offsetof(struct snd_pcm_info, card)", unsafe.Offsetof(pi.Card)},
		{"offsetof(struct snd_pcm_info, id)", unsafe.Offsetof(pi.ID)},
		{"offsetof(struct snd_pcm_info, name)", unsafe.Offsetof(pi.Name)},
		{"offsetof(struct snd_pcm_info, subname)", unsafe.Offsetof(pi.Subname)},
		{"offsetof(struct snd_pcm_info, dev_class)", unsafe.Offsetof(pi.DevClass)},
		{"offsetof(struct snd_pcm_info, subdevices_count)", unsafe.Offsetof(pi.SubdevicesCount)},
		{"offsetof(struct snd_pcm_info, subdevices_avail)", unsafe.Offsetof(pi.SubdevicesAvail)},
		{"offsetof(struct snd_pcm_info, sync)", unsafe.Offsetof(pi.Sync)},
		{"offsetof(struct snd_pcm_info, reserved)", unsafe.Offsetof(pi.Reserved)},

		{"sizeof(struct snd_ctl_card_info)", unsafe.Sizeof(ci)},
		{"offsetof(struct snd_ctl_card_info, id)", unsafe.Offsetof(ci.ID)},
		{"offsetof(struct snd_ctl_card_info, driver)", unsafe.Offsetof(ci.Driver)},
		{"offsetof(struct snd_ctl_card_info, name)", unsafe.Offsetof(ci.Name)},
		{"offsetof(struct snd_ctl_card_info, longname)", unsafe.Offsetof(ci.Longname)},
		{"offsetof(struct snd_ctl_card_info, mixername)", unsafe.Offsetof(ci.Mixername)},
		{"offsetof(struct snd_ctl_card_info, components)", unsafe.Offsetof(ci.Components)},

		{"SNDRV_PCM_VERSION", pcmVersion},
		{"SNDRV_PCM_IOCTL_PVERSION", ioctlPVersion},
		{"SNDRV_PCM_IOCTL_INFO", ioctlInfo},
		{"SNDRV_PCM_IOCTL_TTSTAMP", ioctlTTstamp},
		{"SNDRV_PCM_IOCTL_USER_PVERSION", ioctlUserPVersion},
		{"SNDRV_PCM_IOCTL_HW_REFINE", ioctlHWRefine},
		{"SNDRV_PCM_IOCTL_HW_PARAMS", ioctlHWParams},
		{"SNDRV_PCM_IOCTL_HW_FREE", ioctlHWFree},
		{"SNDRV_PCM_IOCTL_SW_PARAMS", ioctlSWParams},
		{"SNDRV_PCM_IOCTL_STATUS", ioctlStatus},
		{"SNDRV_PCM_IOCTL_SYNC_PTR", ioctlSyncPtr},
		{"SNDRV_PCM_IOCTL_STATUS_EXT", ioctlStatusExt},
		{"SNDRV_PCM_IOCTL_PREPARE", ioctlPrepare},
		{"SNDRV_PCM_IOCTL_HWSYNC", ioctlHWSync},
		{"SNDRV_PCM_IOCTL_START", ioctlStart},
		{"SNDRV_PCM_IOCTL_DROP", ioctlDrop},
		{"SNDRV_PCM_IOCTL_WRITEI_FRAMES", ioctlWriteiFrames},
		{"SNDRV_PCM_IOCTL_READI_FRAMES", ioctlReadiFrames},
		{"SNDRV_PCM_IOCTL_LINK", ioctlLink},
		{"SNDRV_PCM_IOCTL_UNLINK", ioctlUnlink},
		{"SNDRV_CTL_IOCTL_CARD_INFO", ioctlCtlCardInfo},
		{"SNDRV_CTL_IOCTL_PCM_NEXT_DEVICE", ioctlCtlPCMNextDevice},
		{"SNDRV_CTL_IOCTL_PCM_INFO", ioctlCtlPCMInfo},
		{"SNDRV_CTL_IOCTL_PCM_PREFER_SUBDEVICE", ioctlCtlPCMPreferSub},
		{"SNDRV_PCM_MMAP_OFFSET_STATUS", mmapOffsetStatus},
		{"SNDRV_PCM_MMAP_OFFSET_CONTROL", mmapOffsetControl},
		{"SNDRV_PCM_FORMAT_S16_LE", formatS16LE},
		{"SNDRV_PCM_FORMAT_S32_LE", formatS32LE},
		{"SNDRV_PCM_FORMAT_S24_LE", formatS24LE},
		{"SNDRV_PCM_FORMAT_S24_3LE", formatS24_3LE},
		{"SNDRV_PCM_FORMAT_FLOAT_LE", formatFloatLE},
		{"SNDRV_PCM_ACCESS_RW_INTERLEAVED", accessRWInterleaved},
		{"SNDRV_PCM_ACCESS_MMAP_INTERLEAVED", accessMmapInterleaved},
		{"SNDRV_PCM_STATE_XRUN", stateXrun},
		{"SNDRV_PCM_STATE_RUNNING", stateRunning},
		{"SNDRV_PCM_HW_PARAM_RATE", paramRate},
		{"SNDRV_PCM_HW_PARAM_BUFFER_SIZE", paramBufferSize},
		{"SNDRV_PCM_HW_PARAM_LAST_INTERVAL", paramLastInterval},
		{"SNDRV_PCM_TSTAMP_TYPE_MONOTONIC", tstampTypeMonotonic},
		{"SNDRV_PCM_AUDIO_TSTAMP_TYPE_COMPAT", atstampCompat},
		{"SNDRV_PCM_AUDIO_TSTAMP_TYPE_DEFAULT", atstampDefault},
		{"SNDRV_PCM_AUDIO_TSTAMP_TYPE_LINK", atstampLink},
		{"SNDRV_PCM_AUDIO_TSTAMP_TYPE_LINK_ABSOLUTE", atstampLinkAbsolute},
		{"SNDRV_PCM_AUDIO_TSTAMP_TYPE_LINK_ESTIMATED", atstampLinkEstimated},
		{"SNDRV_PCM_AUDIO_TSTAMP_TYPE_LINK_SYNCHRONIZED", atstampLinkSync},
		{"SNDRV_PCM_INFO_HAS_WALL_CLOCK", infoHasLinkAtime},
		{"SNDRV_PCM_SYNC_PTR_APPL", syncPtrAppl},
		{"SNDRV_PCM_SYNC_PTR_AVAIL_MIN", syncPtrAvailMin},
		// The bitfield order of snd_interval.
		{"({struct snd_interval i = {0}; i.openmin = 1; *((unsigned int *)&i + 2);})", intervalOpenMin},
		{"({struct snd_interval i = {0}; i.openmax = 1; *((unsigned int *)&i + 2);})", intervalOpenMax},
		{"({struct snd_interval i = {0}; i.integer = 1; *((unsigned int *)&i + 2);})", intervalInteger},
		{"({struct snd_interval i = {0}; i.empty = 1; *((unsigned int *)&i + 2);})", intervalEmpty},
	}
	// The info flags by the names the driver reports them by.
	for _, f := range infoNames {
		checks = append(checks, check{"SNDRV_PCM_INFO_" + f.name, uintptr(f.bit)})
	}
	return checks
}

// TestLayoutMatchesAsoundH compiles a C program against <sound/asound.h>
// (Debian's linux-libc-dev) for the architecture the test runs on and
// compares every size, offset and constant with the Go transcription.
// Under qemu-user (docs/arm.md) the C side is built by the cross compiler
// and run by the same qemu.
func TestLayoutMatchesAsoundH(t *testing.T) {
	checks := layoutChecks()
	exprs := make([]string, len(checks))
	for i, c := range checks {
		exprs[i] = c.c
	}
	want := cLayout(t, runtime.GOARCH, exprs)
	for i, c := range checks {
		if uint64(c.goVal) != want[i] {
			t.Errorf("%s: C says %d (%#x), Go has %d (%#x)", c.c, want[i], want[i], c.goVal, c.goVal)
		}
	}
	// On 32-bit, the old records against the header built with a 32-bit time_t.
	old := time32Checks()
	exprs = exprs[:0]
	for _, c := range old {
		exprs = append(exprs, c.c)
	}
	if len(old) > 0 {
		want = cLayoutWith(t, runtime.GOARCH, exprs, nil)
		for i, c := range old {
			if uint64(c.goVal) != want[i] {
				t.Errorf("time32: %s: C says %d (%#x), Go has %d (%#x)", c.c, want[i], want[i], c.goVal, c.goVal)
			}
		}
	}
}
