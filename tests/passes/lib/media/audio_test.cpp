// Audio: WAV and FLAC decoding, downmix, resampling, windows, and broken clips as Input errors
// naming the file.
#include <sndfile.h>

#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "MediaTestFiles.h"
#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

namespace qopt::media {
namespace {

using test::Bytes;

constexpr int kWav16 = SF_FORMAT_WAV | SF_FORMAT_PCM_16;

InputShapeInfo input(std::vector<std::optional<int64_t>> dims) {
  return {"audio", DataType::Float, std::move(dims), true};
}

constexpr std::nullopt_t kOpen = std::nullopt;

std::vector<float> values(const interp::Array& array) {
  return array.toFloatVector();
}

class AudioInput : public ::testing::Test {
 protected:
  std::vector<interp::Array> load(const Bytes& bytes, const std::string& spec,
                                  const InputShapeInfo& info, const char* name = "clip.wav") {
    file_ = folder_.write(name, bytes);
    return loadMedia(file_, PreprocessSpec::parse(spec), info);
  }
  Error failure(const Bytes& bytes, const std::string& spec, const InputShapeInfo& info,
                const char* name = "clip.wav") {
    try {
      load(bytes, spec, info, name);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "no error";
    return Error("none");
  }
  test::TempFolder folder_;
  std::filesystem::path file_;
};

Bytes ramp(int count, int rate = 8000) {
  std::vector<int16_t> samples;
  for (int i = 0; i < count; ++i) samples.push_back(static_cast<int16_t>(i * 1024));
  return test::encodeAudio(rate, 1, samples, kWav16);
}

TEST(AudioDecode, Pcm16FloatAndFlac) {
  std::vector<int16_t> pcm = {0, 16384, -32768, 32767};
  Audio audio = decodeAudioBytes(test::encodeAudio(22050, 1, pcm, kWav16), "a.wav");
  EXPECT_EQ(audio.rate, 22050);
  EXPECT_EQ(audio.channels, 1);
  EXPECT_EQ(audio.samples, (std::vector<float>{0, 0.5f, -1, 32767 / 32768.0f}));

  std::vector<float> floats = {0.25f, -0.75f, 1.5f, 0};
  audio = decodeAudioBytes(
      test::encodeAudioFloat(48000, 2, floats, SF_FORMAT_WAV | SF_FORMAT_FLOAT), "f.wav");
  EXPECT_EQ(audio.channels, 2);
  EXPECT_EQ(audio.samples, floats);

  audio = decodeAudioBytes(test::encodeAudio(16000, 1, pcm, SF_FORMAT_FLAC | SF_FORMAT_PCM_16),
                           "a.flac");
  EXPECT_EQ(audio.rate, 16000);
  EXPECT_EQ(audio.samples, (std::vector<float>{0, 0.5f, -1, 32767 / 32768.0f}));
}

TEST_F(AudioInput, StereoIsAveragedToMono) {
  std::vector<float> stereo = {0.5f, -0.25f, 1, 1, -1, 0};
  auto arrays = load(test::encodeAudioFloat(8000, 2, stereo, SF_FORMAT_WAV | SF_FORMAT_FLOAT), "",
                     input({1, kOpen}));
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(values(arrays[0]), (std::vector<float>{0.125f, 1, -0.5f}));
}

TEST_F(AudioInput, ResamplingGivesTheRateAndLength) {
  // A 200 Hz sine at 8 kHz, 0.1 s: at 16 kHz it has 1600 samples and is still the same sine.
  std::vector<int16_t> sine;
  for (int i = 0; i < 800; ++i) {
    sine.push_back(static_cast<int16_t>(
        std::lround(16000 * std::sin(2 * std::numbers::pi * 200 * i / 8000.0))));
  }
  auto arrays = load(test::encodeAudio(8000, 1, sine, kWav16), "rate=16000", input({1, kOpen}));
  ASSERT_EQ(arrays.size(), 1u);
  std::vector<float> v = values(arrays[0]);
  ASSERT_EQ(v.size(), 1600u);
  for (int i = 400; i < 1200; ++i) {
    double expected = 16000 / 32768.0 * std::sin(2 * std::numbers::pi * 200 * i / 16000.0);
    EXPECT_NEAR(v[i], expected, 0.01) << i;
  }
  // 44.1 kHz to 16 kHz: round(4410 * 16000 / 44100) = 1600.
  arrays = load(ramp(4410, 44100), "rate=16000", input({1, kOpen}));
  EXPECT_EQ(arrays[0].shape(), (interp::Shape{1, 1600}));
  // The clip's own rate: nothing changes.
  arrays = load(ramp(5), "rate=8000", input({1, kOpen}));
  EXPECT_EQ(values(arrays[0])[4], 4 * 1024 / 32768.0f);
}

TEST_F(AudioInput, WindowsHopAndPadding) {
  auto sample = [](int i) { return static_cast<float>(i * 1024 / 32768.0); };
  // 10 samples, windows of 4 every 3: starts 0, 3, 6.
  auto arrays = load(ramp(10), "frames=4 hop=3", input({1, kOpen}));
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(values(arrays[2]), (std::vector<float>{sample(6), sample(7), sample(8), sample(9)}));
  // 11 samples, windows of 4: the partial last window (8..10) is dropped.
  EXPECT_EQ(load(ramp(11), "frames=4", input({1, kOpen})).size(), 2u);
  // Shorter than a window: one window, padded with silence.
  arrays = load(ramp(3), "", input({1, 5}));
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(values(arrays[0]), (std::vector<float>{sample(0), sample(1), sample(2), 0, 0}));
  // Padding is silence before normalization.
  arrays = load(ramp(1), "frames=2 mean=1", input({kOpen}));
  EXPECT_EQ(arrays[0].shape(), (interp::Shape{2}));
  EXPECT_EQ(values(arrays[0]), (std::vector<float>{-1, -1}));
}

TEST_F(AudioInput, ShapeFollowsTheInputRank) {
  EXPECT_EQ(load(ramp(6), "", input({1, kOpen}))[0].shape(), (interp::Shape{1, 6}));
  EXPECT_EQ(load(ramp(6), "", input({1, 1, kOpen}))[0].shape(), (interp::Shape{1, 1, 6}));
  EXPECT_EQ(load(ramp(6), "", input({1, 1, 3})).size(), 2u);
  EXPECT_EQ(load(ramp(6), "", InputShapeInfo{"a", DataType::Float, {}, false})[0].shape(),
            (interp::Shape{1, 6}));
  Error e = failure(ramp(6), "", input({1, 2, kOpen}));
  EXPECT_EQ(e.cause(), "the clip gives [1,1,6] but input 'audio' is [1,2,?]");
  EXPECT_EQ(e.where(), file_.string());
  e = failure(ramp(6), "", input({2, kOpen}));
  EXPECT_NE(e.cause().find("takes a batch of 2"), std::string::npos);
}

TEST_F(AudioInput, ScaleGivesInt16Units) {
  auto arrays = load(ramp(3), "scale=32768", input({1, kOpen}));
  EXPECT_EQ(values(arrays[0]), (std::vector<float>{0, 1024, 2048}));
}

TEST_F(AudioInput, SpecContradictingTheInputIsAUsageError) {
  EXPECT_EQ(failure(ramp(8), "frames=4", input({1, 8})).kind(), ErrorKind::Usage);
  EXPECT_EQ(failure(ramp(8), "mean=1,2,3", input({1, kOpen})).kind(), ErrorKind::Usage);
}

TEST_F(AudioInput, BrokenClipsAreInputErrors) {
  Bytes wav = ramp(1000);
  Error e = failure(Bytes(wav.begin(), wav.begin() + 1000), "", input({1, kOpen}));
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_EQ(e.where(), file_.string());
  EXPECT_NE(e.cause().find("truncated WAV data"), std::string::npos) << e.cause();

  Bytes corrupt(wav.begin(), wav.begin() + 12);
  corrupt.insert(corrupt.end(), 40, 0xee);
  e = failure(corrupt, "", input({1, kOpen}));
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_NE(e.cause().find("libsndfile"), std::string::npos) << e.cause();

  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0};
  EXPECT_EQ(failure(png, "", input({1, kOpen})).cause(), "not a WAV or FLAC audio file");

  std::vector<int16_t> noise;
  for (int i = 0; i < 4000; ++i) noise.push_back(static_cast<int16_t>((i * 7919) % 65536 - 32768));
  Bytes flac = test::encodeAudio(8000, 1, noise, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  e = failure(Bytes(flac.begin(), flac.begin() + static_cast<long>(flac.size() / 2)), "",
              input({1, kOpen}), "cut.flac");
  EXPECT_EQ(e.kind(), ErrorKind::Input);
  EXPECT_EQ(e.where(), file_.string());
}

TEST_F(AudioInput, SameBytesGiveTheSameArrays) {
  Bytes wav = ramp(3000, 44100);
  auto a = load(wav, "rate=16000 frames=256 hop=100", input({1, kOpen}));
  auto b = load(wav, "rate=16000 frames=256 hop=100", input({1, kOpen}));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(values(a[i]), values(b[i]));
}

}  // namespace
}  // namespace qopt::media
