/**
 * @file encoder_container.cpp
 * @brief The file format around the codestreams either backend makes: a raw
 * codestream as it is, or a JP2 file (ISO/IEC 15444-1 Annex I). The boxes
 * are written here, after the backend, so both backends give the same files.
 */
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "codestream/jp2.h"
#include "common/status.h"
#include "pipeline/encoder_common.h"

namespace j2kc {
namespace {

/** Each codestream of the backend, behind the JP2 boxes made once at create. */
class Jp2Encoder final : public Encoder {
public:
    Jp2Encoder(std::unique_ptr<Encoder> codestreams, std::vector<uint8_t> header)
        : codestreams_(std::move(codestreams)), header_(std::move(header))
    {}

    j2kc_backend backend() const override { return codestreams_->backend(); }
    bool submit(const j2kc_image &image, int64_t tag) override { return codestreams_->submit(image, tag); }

    bool receive(std::vector<uint8_t> &file, int64_t &tag, bool flush) override
    {
        if (!codestreams_->receive(codestream_, tag, flush)) return false;
        file.assign(header_.begin(), header_.end());  // the caller's vector keeps its capacity
        append_jp2_codestream_box(file, codestream_.data(), codestream_.size());
        return true;
    }

    j2kc_stage_times stage_times() const override { return codestreams_->stage_times(); }

private:
    std::unique_ptr<Encoder> codestreams_;
    std::vector<uint8_t> header_;      ///< signature, ftyp and jp2h: the same for every frame
    std::vector<uint8_t> codestream_;  ///< reused from frame to frame
};

/**
 * A C caller may leave any int in an enum field; reading it through the C++
 * enum type is undefined unless the value is one the type can hold, so it is
 * read as the int it is before it is checked.
 */
template <typename Enum>
int enum_value(const Enum &field)
{
    static_assert(sizeof(Enum) == sizeof(int), "the C API's enums are int-sized");
    int value;
    std::memcpy(&value, &field, sizeof value);
    return value;
}

}  // namespace

std::vector<uint8_t> container_header(const j2kc_encoder_config &config, const j2kc_image &shape)
{
    const int container = enum_value(config.container);
    J2KC_CHECK_ARG(container == J2KC_CONTAINER_CODESTREAM || container == J2KC_CONTAINER_JP2,
                   "container %d is not CODESTREAM (0) or JP2 (1)", container);
    J2KC_CHECK_ARG((config.icc_profile == nullptr) == (config.icc_profile_size == 0),
                   "icc_profile and icc_profile_size must be given together");
    if (container != J2KC_CONTAINER_JP2) return {};
    const int colour = enum_value(config.color_space);
    const bool named = colour >= J2KC_COLOR_UNKNOWN && colour <= J2KC_COLOR_CMYK;
    J2KC_CHECK_ARG(named || config.icc_profile,
                   "colour space %d is none of j2kc.h's: JP2 can say it only through an "
                   "ICC profile",
                   colour);
    J2KC_CHECK_ARG(shape.components && shape.num_components >= 1 && shape.num_components <= 16384,
                   "image for JP2: %u components", shape.num_components);
    ImageSize siz;
    siz.width = shape.width;
    siz.height = shape.height;
    for (uint32_t c = 0; c < shape.num_components; ++c) {
        const j2kc_component &k = shape.components[c];
        J2KC_CHECK_ARG(k.precision >= 1 && k.precision <= 38, "component %u: precision %u", c, k.precision);
        ComponentSize cs;
        cs.precision = k.precision;
        cs.is_signed = k.is_signed != 0;
        siz.components.push_back(cs);
    }
    const std::vector<uint8_t> icc(config.icc_profile, config.icc_profile + config.icc_profile_size);
    // HT codestreams go in JPH files (ISO/IEC 15444-15 Annex D): JP2's boxes under the brand 'jph '.
    const uint32_t brand = config.block_coder == J2KC_BLOCK_CODER_HT ? jp2_box::kBrandJph : jp2_box::kBrandJp2;
    return jp2_file_header(siz, named ? config.color_space : J2KC_COLOR_UNKNOWN, icc, brand);
}

std::unique_ptr<Encoder> with_container(std::unique_ptr<Encoder> codestreams, const j2kc_encoder_config &config,
                                        std::vector<uint8_t> header)
{
    if (config.container != J2KC_CONTAINER_JP2) return codestreams;
    return std::make_unique<Jp2Encoder>(std::move(codestreams), std::move(header));
}

}  // namespace j2kc
