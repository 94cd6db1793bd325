//go:build linux && (arm || 386) && !vm

package alsa

import "unsafe"

// time32Checks are the old records (hasTime32) against <sound/asound.h>
// compiled with a 32-bit time_t, the C library's default before
// _TIME_BITS=64: what a kernel before 5.6 takes.
func time32Checks() []struct {
	c     string
	goVal uintptr
} {
	var ms mmapStatus32
	var mc mmapControl32
	var sp syncPtr32
	var st pcmStatus32
	return []struct {
		c     string
		goVal uintptr
	}{
		{"sizeof(time_t)", 4},
		{"sizeof(struct snd_pcm_mmap_status)", unsafe.Sizeof(ms)},
		{"offsetof(struct snd_pcm_mmap_status, hw_ptr)", unsafe.Offsetof(ms.HWPtr)},
		{"offsetof(struct snd_pcm_mmap_status, tstamp)", unsafe.Offsetof(ms.Tstamp)},
		{"offsetof(struct snd_pcm_mmap_status, suspended_state)", unsafe.Offsetof(ms.SuspendedState)},
		{"offsetof(struct snd_pcm_mmap_status, audio_tstamp)", unsafe.Offsetof(ms.AudioTstamp)},
		{"sizeof(struct snd_pcm_mmap_control)", unsafe.Sizeof(mc)},
		{"offsetof(struct snd_pcm_mmap_control, avail_min)", unsafe.Offsetof(mc.AvailMin)},
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
		{"SNDRV_PCM_IOCTL_STATUS", ioctlStatus32},
		{"SNDRV_PCM_IOCTL_SYNC_PTR", ioctlSyncPtr32},
		{"SNDRV_PCM_IOCTL_STATUS_EXT", ioctlStatusExt32},
	}
}
