# libj2kcuda round trips, profile streams and decoding of codestreams made by
# opj_compress.
#
#   make fate-j2k_cuda        the list on the CPU reference backend (CI)
#   make fate-j2k_cuda-gpu    the same list and references on the CUDA backend
#
# Every round trip prints the md5 of the coded file (the codestreams, so both
# backends must produce the same bytes) and then the framemd5 of the decoded
# frames. Lossless tests share their reference with the framemd5 of the
# source, which makes them bit-exact checks.

J2K_CUDA_BACKEND ?= cpu
J2K_CUDA_DATA     = $(TARGET_PATH)/tests/data/fate
J2K_CUDA_SAMPLES  = $(SRC_PATH)/tests/j2k_cuda
J2K_CUDA_SWS      = -sws_flags +accurate_rnd+bitexact+full_chroma_int
# The encoder runs under j2k_cuda, the name of the first releases, which
# stays an alias: ffmpeg writes the encoder's name into each file's encoder
# tag, and the references hold those files' md5.
J2K_CUDA_ENC      = -c:v j2k_cuda -backend $(J2K_CUDA_BACKEND) -threads 2
J2K_CUDA_DEC      = -c:v libj2kcuda -backend $(J2K_CUDA_BACKEND)

# $(1): lavfi source, $(2): pixel format, $(3): encoder options, $(4): container
define J2K_CUDA_ROUNDTRIP
md5 -f lavfi -i $(1) $(J2K_CUDA_SWS) -vf scale,format=$(2) $(J2K_CUDA_ENC) $(3) -fflags +bitexact -flags +bitexact -f $(4) && framemd5 $(J2K_CUDA_DEC) -i $(J2K_CUDA_DATA)/$$test.out -vf setsar=1 -c:v rawvideo
endef

# Lossless: the decoded frames alone (repacked to the source's layout, which
# is exact), compared against the source's framemd5.
# $(4): decoder options, e.g. the colour hints a raw codestream cannot carry.
define J2K_CUDA_LOSSLESS
ffmpeg -f lavfi -i $(1) $(J2K_CUDA_SWS) -vf scale,format=$(2) $(J2K_CUDA_ENC) -lossless 1 $(3) -fflags +bitexact -flags +bitexact -f nut -y $(J2K_CUDA_DATA)/$$test.nut && framemd5 $(J2K_CUDA_DEC) $(4) -i $(J2K_CUDA_DATA)/$$test.nut $(J2K_CUDA_SWS) -vf scale,format=$(2),setsar=1 -c:v rawvideo
endef
define J2K_CUDA_SOURCE
framemd5 -f lavfi -i $(1) $(J2K_CUDA_SWS) -vf scale,format=$(2),setsar=1 -c:v rawvideo
endef

# Small odd sizes keep the CPU backend quick and exercise partial code-blocks
# and odd chroma sizes; three frames half a second apart differ. The source's
# format is pinned at every link, so that every test sees the same pixels
# whatever formats its own sink accepts.
J2K_CUDA_COMMA     := ,
J2K_CUDA_PIN        = format=gbrp16le$(J2K_CUDA_COMMA)scale=$(1):flags=bitexact+accurate_rnd$(J2K_CUDA_COMMA)format=gbrp16le
J2K_CUDA_SRC_SMALL  = testsrc2=s=68x46:r=2:d=1.5$(J2K_CUDA_COMMA)$(call J2K_CUDA_PIN,67:45)
J2K_CUDA_SRC_420    = testsrc2=s=68x46:r=2:d=1.5$(J2K_CUDA_COMMA)$(call J2K_CUDA_PIN,65:43)

# Lossy round trips, one per input pixel format.
J2K_CUDA_LOSSY_FMTS = gray gray10le gray12le gray16le rgb24 rgb48le gbrp gbrp10le gbrp12le gbrp16le \
                      yuv444p yuv444p10le yuv444p12le yuv444p16le yuv422p yuv422p10le yuv422p12le yuv422p16le \
                      xyz12le
J2K_CUDA_LOSSY_420  = yuv420p yuv420p10le yuv420p12le yuv420p16le
define J2K_CUDA_LOSSY_TEST
FATE_J2K_CUDA += fate-j2k_cuda-lossy-$(1)
fate-j2k_cuda-lossy-$(1): CMD = $$(call J2K_CUDA_ROUNDTRIP,$$($(2)),$(1),-quality 2,nut)
endef
$(foreach F,$(J2K_CUDA_LOSSY_FMTS),$(eval $(call J2K_CUDA_LOSSY_TEST,$(F),J2K_CUDA_SRC_SMALL)))
$(foreach F,$(J2K_CUDA_LOSSY_420),$(eval $(call J2K_CUDA_LOSSY_TEST,$(F),J2K_CUDA_SRC_420)))

# Lossless round trips must give back the source bit for bit.
J2K_CUDA_LOSSLESS_FMTS = gray gray10le gray12le gray16le rgb24 rgb48le gbrp gbrp10le gbrp12le gbrp16le \
                         yuv444p yuv444p10le yuv422p yuv422p16le xyz12le
J2K_CUDA_LOSSLESS_420  = yuv420p yuv420p12le
define J2K_CUDA_LOSSLESS_TEST
FATE_J2K_CUDA += fate-j2k_cuda-source-$(1) fate-j2k_cuda-lossless-$(1)
fate-j2k_cuda-source-$(1): CMD = $$(call J2K_CUDA_SOURCE,$$($(2)),$(1))
fate-j2k_cuda-lossless-$(1): CMD = $$(call J2K_CUDA_LOSSLESS,$$($(2)),$(1),,$$(if $$(findstring xyz,$(1)),-color_trc smpte428,$$(if $$(findstring yuv444,$(1)),-colorspace bt709)))
fate-j2k_cuda-lossless-$(1): REF = $$(SRC_PATH)/tests/ref/fate/j2k_cuda-source-$(1)
endef
$(foreach F,$(J2K_CUDA_LOSSLESS_FMTS),$(eval $(call J2K_CUDA_LOSSLESS_TEST,$(F),J2K_CUDA_SRC_SMALL)))
$(foreach F,$(J2K_CUDA_LOSSLESS_420),$(eval $(call J2K_CUDA_LOSSLESS_TEST,$(F),J2K_CUDA_SRC_420)))
# Coding options that must not change the decoded image of a lossless stream.
FATE_J2K_CUDA += fate-j2k_cuda-lossless-options
fate-j2k_cuda-lossless-options: CMD = $(call J2K_CUDA_LOSSLESS,$(J2K_CUDA_SRC_SMALL),rgb24,-levels 3 -cblk_width 16 -cblk_height 32 -precinct_width 32 -precinct_height 32 -prog_order rpcl -layers 3 -tile_width 32 -tile_height 24 -tile_parts resolution -tlm 1 -plt 1 -sop 1 -eph 1,)
fate-j2k_cuda-lossless-options: REF = $(SRC_PATH)/tests/ref/fate/j2k_cuda-source-rgb24

# Each codec under its other name: the encoder as libj2kcuda, the decoder as
# j2k_cuda, giving the same pixels.
FATE_J2K_CUDA += fate-j2k_cuda-lossless-libj2kcuda fate-j2k_cuda-lossless-decoder-alias
fate-j2k_cuda-lossless-libj2kcuda: J2K_CUDA_ENC = -c:v libj2kcuda -backend $(J2K_CUDA_BACKEND) -threads 2
fate-j2k_cuda-lossless-libj2kcuda: CMD = $(call J2K_CUDA_LOSSLESS,$(J2K_CUDA_SRC_SMALL),rgb24,,)
fate-j2k_cuda-lossless-libj2kcuda: REF = $(SRC_PATH)/tests/ref/fate/j2k_cuda-source-rgb24
fate-j2k_cuda-lossless-decoder-alias: CMD = framemd5 -c:v j2k_cuda -backend $(J2K_CUDA_BACKEND) -i $(J2K_CUDA_SAMPLES)/opj-lossless-rgb.j2k -c:v rawvideo
fate-j2k_cuda-lossless-decoder-alias: REF = $(SRC_PATH)/tests/ref/fate/j2k_cuda-opj-lossless-rgb

# Coding options on a lossy stream.
FATE_J2K_CUDA += fate-j2k_cuda-options-cprl fate-j2k_cuda-options-budget fate-j2k_cuda-options-step-phases
fate-j2k_cuda-options-cprl: CMD = $(call J2K_CUDA_ROUNDTRIP,$(J2K_CUDA_SRC_SMALL),gbrp12le,-prog_order cprl -layers 4 -levels 2 -tile_parts component -tlm 1,nut)
fate-j2k_cuda-options-budget: CMD = $(call J2K_CUDA_ROUNDTRIP,$(J2K_CUDA_SRC_SMALL),yuv444p,-b:v 600k -max_frame_bytes 2500,nut)
fate-j2k_cuda-options-step-phases: CMD = $(call J2K_CUDA_ROUNDTRIP,$(J2K_CUDA_SRC_SMALL),yuv444p,-b:v 600k -max_frame_bytes 2500 -step_phases 4,nut)

# Profile streams in their containers: DCI 2K and 4K in MXF, IMF in MXF, broadcast in MOV.
FATE_J2K_CUDA += fate-j2k_cuda-dci_2k fate-j2k_cuda-dci_4k fate-j2k_cuda-imf fate-j2k_cuda-broadcast
fate-j2k_cuda-dci_2k: CMD = $(call J2K_CUDA_ROUNDTRIP,testsrc2=s=2048x1080:r=24:d=0.04,xyz12le,-profile:v dci_2k,mxf)
fate-j2k_cuda-dci_4k: CMD = $(call J2K_CUDA_ROUNDTRIP,testsrc2=s=4096x2160:r=24:d=0.04,xyz12le,-profile:v dci_4k,mxf)
fate-j2k_cuda-imf: CMD = $(call J2K_CUDA_ROUNDTRIP,testsrc2=s=1920x1080:r=24:d=0.04,rgb48le,-profile:v imf -lossless 1,mxf)
fate-j2k_cuda-broadcast: CMD = $(call J2K_CUDA_ROUNDTRIP,testsrc2=s=1920x1080:r=25:d=0.04,yuv422p10le,-profile:v broadcast,mov)

# Codestreams made by opj_compress (fate/data/README says how): decoded by
# libj2kcuda; the lossless ones must match FFmpeg's native decoder exactly.
J2K_CUDA_OPJ = opj-lossless-rgb opj-lossless-gray opj-lossy-rgb opj-rpcl-tiles
define J2K_CUDA_OPJ_TEST
FATE_J2K_CUDA += fate-j2k_cuda-$(1)
fate-j2k_cuda-$(1): CMD = framemd5 $$(J2K_CUDA_DEC) -i $$(J2K_CUDA_SAMPLES)/$(1).j2k -c:v rawvideo
endef
$(foreach T,$(J2K_CUDA_OPJ),$(eval $(call J2K_CUDA_OPJ_TEST,$(T))))
FATE_J2K_CUDA_NATIVE = fate-j2k_cuda-opj-lossless-rgb-native fate-j2k_cuda-opj-lossless-gray-native
fate-j2k_cuda-opj-lossless-rgb-native: CMD = framemd5 -c:v jpeg2000 -i $(J2K_CUDA_SAMPLES)/opj-lossless-rgb.j2k -c:v rawvideo
fate-j2k_cuda-opj-lossless-rgb-native: REF = $(SRC_PATH)/tests/ref/fate/j2k_cuda-opj-lossless-rgb
fate-j2k_cuda-opj-lossless-gray-native: CMD = framemd5 -c:v jpeg2000 -i $(J2K_CUDA_SAMPLES)/opj-lossless-gray.j2k -c:v rawvideo
fate-j2k_cuda-opj-lossless-gray-native: REF = $(SRC_PATH)/tests/ref/fate/j2k_cuda-opj-lossless-gray
FATE_J2K_CUDA-$(call DEMDEC, IMAGE_J2K_PIPE, JPEG2000) += $(FATE_J2K_CUDA_NATIVE)

# HTJ2K (ISO/IEC 15444-15): lossless round trips against the source, lossy
# ones with fixed steps and under a byte cap, the IMF HT profile in MXF, a
# JPH file; and HT codestreams of OpenJPH and Grok, decoded by libj2kcuda
# (and the 8-bit one matched by FFmpeg's native decoder, which is off by one
# on the samples of 12-bit HT streams that OpenJPEG and OpenJPH decode as we do).
J2K_CUDA_HT_LOSSLESS_FMTS = rgb24 gray16le yuv422p16le yuv420p12le
define J2K_CUDA_HT_LOSSLESS_TEST
FATE_J2K_CUDA += fate-j2k_cuda-ht-lossless-$(1)
fate-j2k_cuda-ht-lossless-$(1): CMD = $$(call J2K_CUDA_LOSSLESS,$$($(2)),$(1),-ht 1,)
fate-j2k_cuda-ht-lossless-$(1): REF = $$(SRC_PATH)/tests/ref/fate/j2k_cuda-source-$(1)
endef
$(foreach F,rgb24 gray16le yuv422p16le,$(eval $(call J2K_CUDA_HT_LOSSLESS_TEST,$(F),J2K_CUDA_SRC_SMALL)))
$(eval $(call J2K_CUDA_HT_LOSSLESS_TEST,yuv420p12le,J2K_CUDA_SRC_420))
FATE_J2K_CUDA += fate-j2k_cuda-ht-lossy-gbrp12le fate-j2k_cuda-ht-budget fate-j2k_cuda-ht-imf fate-j2k_cuda-ht-jph
fate-j2k_cuda-ht-lossy-gbrp12le: CMD = $(call J2K_CUDA_ROUNDTRIP,$(J2K_CUDA_SRC_SMALL),gbrp12le,-ht 1 -quality 2,nut)
fate-j2k_cuda-ht-budget: CMD = $(call J2K_CUDA_ROUNDTRIP,$(J2K_CUDA_SRC_SMALL),yuv444p,-ht 1 -max_frame_bytes 2500,nut)
fate-j2k_cuda-ht-imf: CMD = $(call J2K_CUDA_ROUNDTRIP,testsrc2=s=1920x1080:r=24:d=0.04,rgb48le,-profile:v imf -ht 1 -lossless 1,mxf)
fate-j2k_cuda-ht-jph: CMD = $(call J2K_CUDA_ROUNDTRIP,$(J2K_CUDA_SRC_SMALL),rgb48le,-ht 1 -format jp2 -frames:v 1 -update 1,image2)

J2K_CUDA_PEER_HT = ojph-ht-lossless-rgb.j2c grk-ht-tiles-rgb12.j2k
define J2K_CUDA_PEER_HT_TEST
FATE_J2K_CUDA += fate-j2k_cuda-$(basename $(1))
fate-j2k_cuda-$(basename $(1)): CMD = framemd5 $$(J2K_CUDA_DEC) -i $$(J2K_CUDA_SAMPLES)/$(1) -c:v rawvideo
endef
$(foreach T,$(J2K_CUDA_PEER_HT),$(eval $(call J2K_CUDA_PEER_HT_TEST,$(T))))
fate-j2k_cuda-ojph-ht-lossless-rgb-native: CMD = framemd5 -c:v jpeg2000 -i $(J2K_CUDA_SAMPLES)/ojph-ht-lossless-rgb.j2c -c:v rawvideo
fate-j2k_cuda-ojph-ht-lossless-rgb-native: REF = $(SRC_PATH)/tests/ref/fate/j2k_cuda-ojph-ht-lossless-rgb
FATE_J2K_CUDA-$(call DEMDEC, IMAGE_J2K_PIPE, JPEG2000) += fate-j2k_cuda-ojph-ht-lossless-rgb-native

FATE_J2K_CUDA_ALL = $(if $(CONFIG_LIBJ2KCUDA_ENCODER)$(CONFIG_LIBJ2KCUDA_DECODER),$(FATE_J2K_CUDA) $(FATE_J2K_CUDA-yes))

FATE_FFMPEG += $(FATE_J2K_CUDA_ALL)
fate-j2k_cuda: $(FATE_J2K_CUDA_ALL)

# The same list and references on the GPU.
fate-j2k_cuda-gpu:
	$(MAKE) fate-j2k_cuda J2K_CUDA_BACKEND=cuda
.PHONY: fate-j2k_cuda-gpu
