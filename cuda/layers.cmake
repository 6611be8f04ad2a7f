# The layers of libj2kcuda, stated once. Each folder of cuda/ may include its
# own headers and those of the folders it uses below, and of what they use in
# turn; nothing above it and no sibling it does not name.
#
#   tools                               the j2kc command line
#   api                                 the C API of include/j2kc.h
#   pipeline                            encoders and decoders, CPU and CUDA
#   tier1 tier2 dwt color quant rate    the coding stages
#   geometry                            Annex B: tiles, bands, precincts, code-blocks
#   codestream                          Annex A markers, JP2 boxes
#   common                              status, logging, integer maths, CUDA plumbing
#
# include/j2kc.h, the public C header, holds plain C declarations that every
# layer may see (status codes, enums).
#
# cuda/CMakeLists.txt links each stage's target to the folders it uses, and
# check_layers.cmake fails the build (target j2kc_layers) and the test suite
# (test layers) on an #include that these lines do not allow.

set(J2KC_FOLDERS common codestream geometry tier1 tier2 dwt color quant rate pipeline api tools)

set(J2KC_USES_common)
set(J2KC_USES_codestream common)
# The partition is computed from the SIZ, COD and COC parameters.
set(J2KC_USES_geometry codestream)
set(J2KC_USES_tier1 geometry)
# Codeword segments of a code-block style (tier1/codeword_segment.h); the GPU
# Tier-2 answers rate control's exact-size question in its PcrdSizes.
set(J2KC_USES_tier2 geometry tier1 rate)
set(J2KC_USES_dwt geometry)
set(J2KC_USES_color geometry)
# Where each sub-band lies in the DWT's buffer (dwt/dwt_layout.h).
set(J2KC_USES_quant geometry dwt)
set(J2KC_USES_rate geometry)
set(J2KC_USES_pipeline tier1 tier2 dwt color quant rate)
set(J2KC_USES_api pipeline)
set(J2KC_USES_tools api)

# j2kc_layer_below(<folder> <out>): every folder <folder> may include, itself excluded.
function(j2kc_layer_below folder out)
  set(below)
  set(todo ${J2KC_USES_${folder}})
  while(todo)
    list(POP_FRONT todo next)
    if(NOT next IN_LIST below)
      list(APPEND below ${next})
      list(APPEND todo ${J2KC_USES_${next}})
    endif()
  endwhile()
  set(${out} ${below} PARENT_SCOPE)
endfunction()
