/*
 * j2kc.h: the public C interface of libj2kcuda, a JPEG 2000 (ISO/IEC 15444-1)
 * encoder and decoder with a CUDA backend and a CPU reference backend.
 *
 * Plain C99. No CUDA header is included: CUDA contexts and streams travel as
 * void *, device pointers as uint64_t. Every function returns J2KC_OK (0) or
 * a negative j2kc_status; details go to the log callback, never to stdout.
 * No global state: any number of encoders and decoders, on any number of
 * GPUs, may live in one process.
 */
#ifndef J2KC_H
#define J2KC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define J2KC_VERSION_MAJOR 0
#define J2KC_VERSION_MINOR 1
#define J2KC_VERSION_PATCH 0

/** @brief Library version as (major << 16) | (minor << 8) | patch. */
unsigned j2kc_version(void);

typedef enum j2kc_status {
    J2KC_OK = 0,
    J2KC_ERR_NOMEM = -1,        /**< host or device allocation failed */
    J2KC_ERR_INVALID_ARG = -2,  /**< a caller-side mistake: bad option, NULL, size */
    J2KC_ERR_INVALID_DATA = -3, /**< malformed or truncated codestream */
    J2KC_ERR_UNSUPPORTED = -4,  /**< legal input this build cannot handle */
    J2KC_ERR_CUDA = -5,         /**< a CUDA runtime call failed */
    J2KC_ERR_NO_DEVICE = -6,    /**< the CUDA backend was asked for, no usable GPU */
    J2KC_ERR_LIMIT = -7,        /**< a configured resource limit would be exceeded */
    J2KC_ERR_AGAIN = -8,        /**< nothing ready yet: submit more input */
    J2KC_ERR_EOF = -9,          /**< drained: no more output will come */
    J2KC_ERR_INTERNAL = -10     /**< a bug: please report it */
} j2kc_status;

/** @brief A short English name for a status, never NULL. */
const char *j2kc_status_string(int status);

typedef enum j2kc_backend {
    J2KC_BACKEND_AUTO = 0, /**< CUDA when a device is usable, else CPU */
    J2KC_BACKEND_CUDA = 1,
    J2KC_BACKEND_CPU = 2 /**< the reference path: same bytes, same pixels */
} j2kc_backend;

/* Log levels use FFmpeg's numbers so that the wrapper passes them through. */
typedef enum j2kc_log_level {
    J2KC_LOG_ERROR = 16,
    J2KC_LOG_WARNING = 24,
    J2KC_LOG_INFO = 32,
    J2KC_LOG_VERBOSE = 40,
    J2KC_LOG_DEBUG = 48
} j2kc_log_level;

typedef void (*j2kc_log_fn)(void *opaque, int level, const char *message);

typedef enum j2kc_memory { J2KC_MEMORY_HOST = 0, J2KC_MEMORY_CUDA = 1 } j2kc_memory;

/**
 * One image component as it lies in memory. Planar and packed layouts are
 * both described: sample (x, y) of the component is the little-endian
 * integer of bytes_per_sample bytes at data + y * row_stride + x * sample_stride,
 * and its value is that integer >> shift, masked to precision bits (sign
 * extended when is_signed). xyz12le, for instance, is three components of
 * bytes_per_sample 2, sample_stride 6, shift 4.
 */
typedef struct j2kc_component {
    uint64_t data;            /**< host pointer or CUDA device pointer */
    ptrdiff_t row_stride;     /**< bytes from one row to the next */
    uint32_t sample_stride;   /**< bytes from one sample to the next in a row */
    uint8_t bytes_per_sample; /**< 1, 2 or 4 */
    uint8_t shift;            /**< value bits start this many bits up */
    uint8_t precision;        /**< 1..16 (decoder output may hold up to 38) */
    uint8_t is_signed;
    uint8_t dx, dy;         /**< subsampling on the reference grid, 1..255 */
    uint32_t width, height; /**< component size in samples */
} j2kc_component;

typedef struct j2kc_image {
    size_t struct_size;
    j2kc_memory memory;     /**< where every component's data lies */
    uint32_t width, height; /**< reference-grid size */
    uint32_t num_components;
    j2kc_component *components; /**< num_components entries, owned by the caller */
} j2kc_image;

/** @brief Fills the component sizes from width/height and dx/dy (ceil division). */
void j2kc_image_fill_sizes(j2kc_image *image);

/* ------------------------------------------------------------------------ */
/* Encoder                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Colour spaces JPEG 2000 files declare (JP2/JPX colr EnumCS, ISO/IEC
 * 15444-1 I.5.3.3 and 15444-2 M.11.7.2), and DCI X'Y'Z'.
 */
typedef enum j2kc_color_space {
    J2KC_COLOR_UNKNOWN = 0,       /**< not declared, or a space with no entry here (see enumerated_cs) */
    J2KC_COLOR_SRGB = 1,          /**< EnumCS 16: IEC 61966-2-1 */
    J2KC_COLOR_GRAY = 2,          /**< EnumCS 17: greyscale with the sRGB transfer */
    J2KC_COLOR_SYCC = 3,          /**< EnumCS 18: IEC 61966-2-1 Amd 1, full-range BT.601 YCbCr of sRGB */
    J2KC_COLOR_XYZ = 4,           /**< DCI X'Y'Z' (Rsiz 3/4 or told by the container) */
    J2KC_COLOR_ESRGB = 5,         /**< EnumCS 20: e-sRGB (JPX) */
    J2KC_COLOR_ROMM = 6,          /**< EnumCS 21: ROMM-RGB (JPX) */
    J2KC_COLOR_ESYCC = 7,         /**< EnumCS 24: e-sYCC (JPX) */
    J2KC_COLOR_YPBPR_1125_60 = 8, /**< EnumCS 22: BT.709 YPbPr (JPX) */
    J2KC_COLOR_YPBPR_1250_50 = 9, /**< EnumCS 23: BT.601 625-line YPbPr (JPX) */
    J2KC_COLOR_CIELAB = 10,       /**< EnumCS 14: CIE L*a*b* (JPX) */
    J2KC_COLOR_CMYK = 11          /**< EnumCS 12 (JPX) */
} j2kc_color_space;

typedef enum j2kc_container {
    J2KC_CONTAINER_CODESTREAM = 0, /**< raw codestream (.j2c/.j2k) */
    J2KC_CONTAINER_JP2 = 1         /**< JP2 file (.jp2) */
} j2kc_container;

typedef enum j2kc_profile {
    J2KC_PROFILE_NONE = 0,
    J2KC_PROFILE_DCI_2K = 1,
    J2KC_PROFILE_DCI_4K = 2,
    J2KC_PROFILE_IMF = 3, /**< 2K/4K/8K chosen by size; lossy or reversible */
    J2KC_PROFILE_BROADCAST = 4
} j2kc_profile;

typedef enum j2kc_progression {
    J2KC_PROG_LRCP = 0,
    J2KC_PROG_RLCP = 1,
    J2KC_PROG_RPCL = 2,
    J2KC_PROG_PCRL = 3,
    J2KC_PROG_CPRL = 4
} j2kc_progression;

typedef enum j2kc_tile_parts {
    J2KC_TILE_PARTS_NONE = 0,       /**< one tile-part per tile */
    J2KC_TILE_PARTS_RESOLUTION = 1, /**< a new tile-part at each resolution */
    J2KC_TILE_PARTS_COMPONENT = 2,  /**< a new tile-part at each component */
    J2KC_TILE_PARTS_DCI_4K = 3      /**< component x {r < NL, r = NL}, for DCI 4K */
} j2kc_tile_parts;

#define J2KC_MAX_LAYERS 64

/** Code-block coder of the encoder (j2kc_encoder_config::block_coder). */
typedef enum j2kc_block_coder {
    J2KC_BLOCK_CODER_PART1 = 0, /**< EBCOT with the MQ coder (ISO/IEC 15444-1 Annex D) */
    J2KC_BLOCK_CODER_HT = 1     /**< HTJ2K block coder (ISO/IEC 15444-15) */
} j2kc_block_coder;

typedef struct j2kc_encoder_config {
    size_t struct_size;
    j2kc_backend backend;
    int device;         /**< CUDA device ordinal when no context is lent */
    void *cuda_context; /**< CUcontext lent by the caller, or NULL */
    void *cuda_stream;  /**< CUstream lent by the caller, or NULL */
    j2kc_log_fn log;
    void *log_opaque;
    int threads; /**< CPU worker threads, 0 = number of cores */

    j2kc_profile profile;
    int lossless;        /**< 1: 5/3 + RCT, every pass kept */
    int levels;          /**< decomposition levels 0..32, -1 = profile default */
    int cblk_width_log2; /**< 2..10, with width + height <= 12 in log2 */
    int cblk_height_log2;
    int precinct_width_log2; /**< 0 = default: 2^8 (2^7 at r = 0) on images above 256, else maximal; 15 = maximal */
    int precinct_height_log2;
    int precinct_r0_width_log2; /**< r = 0 precinct; 0 = same as the others */
    int precinct_r0_height_log2;
    j2kc_progression progression;
    int layers;                       /**< quality layers, 1..J2KC_MAX_LAYERS */
    uint32_t tile_width, tile_height; /**< 0 = one tile covering the image */
    j2kc_tile_parts tile_parts;
    int tlm, plt, sop, eph;
    int mct;                  /**< -1 auto (on for 3+ components of equal size) */
    int guard_bits;           /**< -1 = profile default */
    uint64_t frame_bytes;     /**< byte budget for the whole codestream, 0 = none */
    uint64_t component_bytes; /**< byte budget for each component, 0 = none */
    int frame_rate_num;       /**< for profiles' rate caps; 0 = 24/1 */
    int frame_rate_den;
    double quality;      /**< without a budget: base step scale, 1.0 = visually lossless */
    int imf_main_level;  /**< 0 = derived from size and frame rate */
    int imf_sub_level;   /**< 0 = derived */
    int broadcast_level; /**< 0 = derived */
    const char *comment; /**< COM marker text, NULL = none */
    /**
     * CUDA backend: frames in flight at once (each holds its own GPU
     * buffers), 0 = default (10, 16 for frames of at most 2048 x 1080 x 3
     * samples; fewer when device memory is short).
     * Frames in CUDA memory are read in stream order: after work already on
     * cuda_stream (or on the legacy default stream when none is lent), and
     * work queued later on cuda_stream waits until the frame has been read;
     * without a lent stream, submit returns once the frame has been read.
     */
    int frames_in_flight;
    /**
     * Output file format: J2KC_CONTAINER_CODESTREAM (a raw codestream, the
     * default) or J2KC_CONTAINER_JP2 (ISO/IEC 15444-1 Annex I), whose colr
     * box says color_space, or carries icc_profile when one is given.
     */
    j2kc_container container;
    /**
     * The colour space the samples are in, for JP2's colr box: SRGB, GRAY
     * and SYCC are written as enumerated spaces; UNKNOWN picks sRGB or
     * greyscale by component count and marks ihdr's UnkC. Other values are
     * refused for JP2 output unless an ICC profile is given.
     */
    j2kc_color_space color_space;
    const uint8_t *icc_profile; /**< JP2 colr method 2 (restricted ICC), copied at create; NULL = none */
    size_t icc_profile_size;
    /**
     * Code-block coder, a j2kc_block_coder: J2KC_BLOCK_CODER_PART1 (the
     * default, EBCOT of ISO/IEC 15444-1) or J2KC_BLOCK_CODER_HT (the HTJ2K
     * block coder of ISO/IEC 15444-15: code-block style 0x40, a CAP marker,
     * Rsiz bit 14; one HT cleanup pass per code-block, or under a byte
     * budget with one layer the HT set, among three at neighbouring
     * bit-planes with their refinement passes, that rate control picks).
     * HT is offered with the generic
     * profile (J2KC_PROFILE_NONE) and with J2KC_PROFILE_IMF, which then means
     * SMPTE ST 2067-21 APP2.HT (RPCL, one layer, no rate cap; lossless picks
     * APP2.HT.REV); the DCI and broadcast profiles refuse it as unsupported.
     * With J2KC_CONTAINER_JP2 an HT codestream is wrapped as a JPH file
     * (ISO/IEC 15444-15 Annex D: JP2's boxes under the brand 'jph ').
     */
    int block_coder;
    /**
     * Step phases searched under a byte budget (irreversible, either block
     * coder; generic, DCI and IMF profiles): a frame is coded with the
     * base step scaled by 2^(k / step_phases) for k = 0 .. step_phases - 1,
     * then at the two phases either side of the best at half that spacing,
     * then at a quarter and at an eighth; each coding is decoded (by the
     * backend's decoder) and compared with the frame, and the codestream
     * with the least squared error over all samples is kept: the phase
     * moves PSNR at equal bytes by up to a few tenths of a dB, differently
     * for each picture. Each of the step_phases + 6 codings costs a whole
     * encode and a decode. 0 (the default): 4 phases, searched on the first
     * frame, whose phase codes the whole sequence, so a sequence pays for
     * the search once. N > 1: N phases, searched on every frame
     * with the generic profile, on the first with DCI and IMF, whose frames
     * must share their quantisation (DCI and IMF packagers check every
     * frame's QCD against the first's). 1: no search. At most 8.
     */
    int step_phases;
} j2kc_encoder_config;

typedef struct j2kc_encoder j2kc_encoder;

/** @brief Sets every field of *config to its default. */
void j2kc_encoder_config_default(j2kc_encoder_config *config);

/**
 * @brief Creates an encoder for images shaped like *shape (sizes, component
 * precision, signedness and subsampling; data pointers are ignored).
 * Pools are sized once here, so later frames allocate nothing.
 */
int j2kc_encoder_create(j2kc_encoder **encoder, const j2kc_encoder_config *config, const j2kc_image *shape);

/** @brief Frees the encoder and sets *encoder to NULL; NULL is fine. */
void j2kc_encoder_free(j2kc_encoder **encoder);

/** @brief Backend the encoder actually runs on (never AUTO). */
j2kc_backend j2kc_encoder_backend(const j2kc_encoder *encoder);

/**
 * @brief Queues one frame and returns without waiting for its codestream
 * when a frame slot is free. The image may be released once this returns
 * (CUDA frames: in stream order, see frames_in_flight). Returns
 * J2KC_ERR_AGAIN when every slot is taken: receive a packet first.
 */
int j2kc_encoder_submit(j2kc_encoder *encoder, const j2kc_image *image, int64_t tag);

typedef struct j2kc_packet {
    const uint8_t *data; /**< owned by the encoder, valid until the next receive */
    size_t size;
    int64_t tag; /**< as given to submit */
} j2kc_packet;

/**
 * @brief Takes the oldest finished codestream. J2KC_ERR_AGAIN when none is
 * queued; with flush set it waits for queued frames and returns J2KC_ERR_EOF
 * once all are out.
 */
int j2kc_encoder_receive(j2kc_encoder *encoder, j2kc_packet *packet, int flush);

/** @brief submit + receive for one frame, for callers that need no queue. */
int j2kc_encode(j2kc_encoder *encoder, const j2kc_image *image, j2kc_packet *packet);

/** @brief Per-stage milliseconds of the last frame, when timing is on (env J2KC_TIMING=1). The CUDA
 *  backend quantises in the DWT's stores: its quant is 0 and dwt holds both. */
typedef struct j2kc_stage_times {
    double upload, color, dwt, quant, tier1, rate, tier2, download, total;
} j2kc_stage_times;
int j2kc_encoder_stage_times(const j2kc_encoder *encoder, j2kc_stage_times *times);

/* ------------------------------------------------------------------------ */
/* Decoder                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct j2kc_decoder_config {
    size_t struct_size;
    j2kc_backend backend;
    int device;
    void *cuda_context;
    void *cuda_stream;
    j2kc_log_fn log;
    void *log_opaque;
    int threads; /**< Tier-1 worker threads, 0 = number of cores */
    int reduce;  /**< discard this many top resolution levels */
    int layers;  /**< decode the first N quality layers, 0 = all */
    /* Limits, checked before anything is allocated. 0 = the default shown. */
    uint64_t max_pixels;          /**< reference-grid area, default 2^31 */
    uint32_t max_components;      /**< default 16384 */
    uint32_t max_tiles;           /**< default 65535 */
    uint64_t max_memory;          /**< bytes of working memory, default 16 GiB */
    int frames_in_flight;         /**< frames j2kc_decoder_submit queues before receive, 0 = 8 (CUDA), 3 (CPU) */
    uint64_t max_tile_components; /**< limit on tiles x components (decode time), default 2^20 */
    /**
     * Where the CUDA backend runs Tier-1 (code-block decoding): -1 auto (the
     * GPU; j2kc_decoder_config_default sets it), 0 the CPU worker threads
     * (zero-initialised configs keep this), 1 the GPU. Either way the pixels
     * are the same; the CPU backend ignores it.
     */
    int tier1_on_gpu;
    /**
     * 0 (default): damaged codestreams decode as far as they go, with a
     * warning (truncated tile-parts, corrupt code-blocks, missing markers),
     * as players want. 1: any such damage fails the frame with
     * J2KC_ERR_INVALID_DATA, as archive checks want.
     */
    int strict;
} j2kc_decoder_config;

typedef struct j2kc_decoder j2kc_decoder;

void j2kc_decoder_config_default(j2kc_decoder_config *config);
int j2kc_decoder_create(j2kc_decoder **decoder, const j2kc_decoder_config *config);
void j2kc_decoder_free(j2kc_decoder **decoder);
j2kc_backend j2kc_decoder_backend(const j2kc_decoder *decoder);

#define J2KC_MAX_INFO_COMPONENTS 16384

typedef struct j2kc_component_info {
    uint32_t width, height; /**< after reduce */
    uint8_t precision;      /**< 1..38 */
    uint8_t is_signed;
    uint8_t dx, dy;
} j2kc_component_info;

typedef struct j2kc_stream_info {
    size_t struct_size;
    uint32_t width, height; /**< image size after reduce */
    uint32_t num_components;
    uint16_t rsiz;      /**< SIZ capabilities (profile) */
    uint8_t levels;     /**< decomposition levels of the first tile-component */
    uint8_t reversible; /**< 5/3 filter on every component */
    uint8_t mct;
    uint8_t is_jp2;
    uint16_t layers;
    uint32_t num_tiles;
    j2kc_color_space color_space;
    j2kc_component_info *components; /**< caller's array, or NULL */
    uint32_t components_capacity;
    /**
     * JP2/JPX colr of the colour specification the file says to use: its
     * EnumCS (0 when there is none, or the space is an ICC profile), and the
     * ICC profile's bytes (NULL when none). icc_profile points into the data
     * given to j2kc_decoder_parse and lives as long as those bytes.
     */
    uint32_t enumerated_cs;
    const uint8_t *icc_profile;
    size_t icc_profile_size;
    /** Channels the JP2 cdef box marks as opacity (0 without cdef). */
    uint32_t num_alpha_channels;
} j2kc_stream_info;

/**
 * @brief Reads the headers of a raw codestream or JP2 file and describes the
 * image the decoder would produce with its current reduce setting.
 */
int j2kc_decoder_parse(j2kc_decoder *decoder, const uint8_t *data, size_t size, j2kc_stream_info *info);

/**
 * @brief Decodes one codestream into the caller's planes. The output image
 * must have as many components as the stream (or fewer: the first ones) at the
 * sizes j2kc_decoder_parse reported; precision and shift of each output
 * component say how samples are scaled and packed.
 */
int j2kc_decode(j2kc_decoder *decoder, const uint8_t *data, size_t size, const j2kc_image *output);

/*
 * Asynchronous decoding, in the style of the encoder's submit/receive: up to
 * frames_in_flight codestreams are decoded at once (on the CUDA backend,
 * Tier-1 of the next frames on the CPU workers while the GPU reconstructs the
 * earlier ones) and come out in submit order. Typical loop:
 *
 *     while (have input) {
 *         while (j2kc_decoder_submit(d, data, size, tag) == J2KC_ERR_AGAIN)
 *             take(j2kc_decoder_receive(d, &image, &tag, 0));   // waits: queue full
 *         ...
 *     }
 *     while ((st = j2kc_decoder_receive(d, &image, &tag, 1)) != J2KC_ERR_EOF)
 *         take(st);
 *
 * The caller learns each frame's shape (to allocate `image`) from
 * j2kc_decoder_parse on the same bytes before submitting them.
 * j2kc_decode is the synchronous path and needs an empty queue.
 */

/**
 * @brief Queues one codestream (raw or JP2) for decoding. The bytes are copied:
 * the caller may release them once this returns. Returns J2KC_ERR_AGAIN when
 * frames_in_flight frames are queued (receive one first), J2KC_ERR_INVALID_ARG
 * for NULL or empty data; whatever is wrong with the data itself is reported
 * by the receive that returns this tag.
 */
int j2kc_decoder_submit(j2kc_decoder *decoder, const uint8_t *data, size_t size, int64_t tag);

/**
 * @brief Writes the oldest queued frame into the caller's planes (as
 * j2kc_decode does: sizes as j2kc_decoder_parse reported for its bytes).
 *
 * Without flush: the oldest frame if it is finished (on the CUDA backend, its
 * GPU work included); if it is not, waits for it when the queue is full (so
 * that a submit/receive loop never spins), else returns J2KC_ERR_AGAIN, so
 * that a caller with more input submits it rather than wait. With flush:
 * waits for the oldest frame, and returns J2KC_ERR_EOF once the queue is
 * empty.
 *
 * Any other return consumes exactly one frame and sets *tag to the tag it was
 * submitted with: J2KC_OK, or that frame's error (invalid data, an output that
 * does not fit it, ...); the frames after it are unaffected. With output NULL
 * the frame is dropped unwritten (its status may then be J2KC_OK even for bad
 * data). Calls on one decoder must not overlap (one thread at a time).
 */
int j2kc_decoder_receive(j2kc_decoder *decoder, const j2kc_image *output, int64_t *tag, int flush);

/**
 * @brief Allocates host memory for output planes that this decoder writes
 * fastest: on the CUDA backend page-locked (portable memory of the device's
 * primary context, page-locked for every CUDA context), so that
 * a receive brings the frame down by DMA straight into the planes, with no
 * staging buffer and no host copy; on the CPU backend plain memory. It is
 * zeroed and 64-byte aligned, and does not depend on the decoder: it may be
 * freed after the decoder, from any thread, with j2kc_host_free.
 *
 * Page-locked memory is taken from the system's RAM until it is freed:
 * allocate it for the frames in use and reuse it, rather than per frame
 * (page-locking takes time, and so does giving it back).
 *
 * @return J2KC_OK with *data set; J2KC_ERR_INVALID_ARG for a NULL argument
 * or size 0; J2KC_ERR_NOMEM; J2KC_ERR_CUDA when the memory cannot be
 * page-locked. *data is NULL on any error.
 */
int j2kc_decoder_host_alloc(j2kc_decoder *decoder, size_t size, void **data);

/** @brief Frees memory from j2kc_decoder_host_alloc; NULL is fine. */
void j2kc_host_free(void *data);

/** @brief Drops every queued frame, for a seek: work in progress is stopped or waited for. */
int j2kc_decoder_reset(j2kc_decoder *decoder);

/**
 * @brief Milliseconds summed over the frames received since the decoder was
 * created or reset. CUDA backend: tier2 and tier1 are CPU time summed over
 * the worker threads (with tier1_on_gpu, tier1 is GPU time of the Tier-1
 * kernel from events, and upload the code-block bytes); upload, dwt (dequantisation and inverse DWT), color
 * (inverse MCT, clip and pack) and download are GPU time from events, except
 * that for host planes in pageable memory download is the time from the end
 * of the pack until the last byte is in the caller's planes: the DMA into a
 * pinned staging buffer (events) and the wall time of the host copy out of
 * it, which overlap. CPU backend: wall times, tier2 the headers, tier1
 * Tier-2 and Tier-1 of the tiles, dwt every sample stage. total: wall time from submit to the end of
 * receive, summed. Divide by the frame count for per-frame figures.
 */
int j2kc_decoder_stage_times(const j2kc_decoder *decoder, j2kc_stage_times *times);

#ifdef __cplusplus
}
#endif

#endif /* J2KC_H */
