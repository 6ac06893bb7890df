// The --preprocess spec: every key parses, errors name the word, and toString reads back.
#include <gtest/gtest.h>

#include "qopt/ir/Error.h"
#include "qopt/media/Media.h"

namespace qopt::media {
namespace {

using Spec = PreprocessSpec;

std::string usageCause(const std::string& text) {
  try {
    Spec::parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage) << text;
    EXPECT_EQ(e.subject(), "--preprocess") << text;
    return e.cause();
  }
  ADD_FAILURE() << "no error for '" << text << "'";
  return "";
}

TEST(PreprocessSpec, EmptyTextGivesDefaults) {
  EXPECT_EQ(Spec::parse(""), Spec{});
  EXPECT_EQ(Spec::parse("  \t "), Spec{});
  EXPECT_EQ(Spec{}.toString(), "");
}

TEST(PreprocessSpec, ParsesEveryKey) {
  Spec spec = Spec::parse(
      "resize=320x48 keep-aspect=pad pad-value=114 pad-align=top-left resample=nearest "
      "channels=bgr layout=nhwc rate=16000 frames=400 hop=160 scale=1/255 "
      "mean=0.485,0.456,0.406 std=0.229,0.224,0.225 input=images");
  EXPECT_EQ(spec.width, 320);
  EXPECT_EQ(spec.height, 48);
  EXPECT_EQ(spec.aspect, Spec::Aspect::Pad);
  EXPECT_EQ(spec.padValue, 114);
  EXPECT_TRUE(spec.padTopLeft);
  EXPECT_TRUE(spec.nearest);
  EXPECT_EQ(spec.channels, Spec::Channels::Bgr);
  EXPECT_EQ(spec.layout, Spec::Layout::Nhwc);
  EXPECT_EQ(spec.rate, 16000);
  EXPECT_EQ(spec.frames, 400);
  EXPECT_EQ(spec.hop, 160);
  EXPECT_EQ(spec.scale, 1.0 / 255);
  EXPECT_EQ(spec.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(spec.std, (std::vector<double>{0.229, 0.224, 0.225}));
  EXPECT_EQ(spec.input, "images");
}

TEST(PreprocessSpec, ScaleTakesFractionsAndNumbers) {
  EXPECT_EQ(Spec::parse("scale=1/255").scale, 1.0 / 255);
  EXPECT_EQ(Spec::parse("scale=0.5").scale, 0.5);
  EXPECT_EQ(Spec::parse("scale=32768").scale, 32768.0);
  EXPECT_EQ(Spec::parse("scale=2/4").scale, 0.5);
  EXPECT_EQ(Spec::parse("scale=1/255").toString(), "scale=1/255");
}

TEST(PreprocessSpec, UnknownKeyListsTheKeys) {
  std::string cause = usageCause("resize=2x2 foo=1");
  EXPECT_NE(cause.find("unknown key 'foo'"), std::string::npos) << cause;
  EXPECT_NE(cause.find("keys: resize, keep-aspect, pad-value"), std::string::npos) << cause;
}

TEST(PreprocessSpec, KeyGivenTwiceIsAnError) {
  EXPECT_NE(usageCause("rate=8000 rate=16000").find("key 'rate' given twice"), std::string::npos);
}

TEST(PreprocessSpec, BadValuesNameTheWord) {
  for (const char* word :
       {"resize=224",    "resize=0x5",   "resize=ax5",     "resize=70000x2", "keep-aspect=yes",
        "pad-value=300", "pad-value=-1", "pad-align=left", "resample=cubic", "channels=rgba",
        "layout=nhw",    "rate=-5",      "rate=0",         "frames=abc",     "hop=1.5",
        "scale=1/0",     "scale=x",      "scale=inf",      "mean=1,2",       "mean=1,,2",
        "std=0",         "std=1,0,1",    "input="}) {
    std::string cause = usageCause(word);
    EXPECT_NE(cause.find(word), std::string::npos) << word << ": " << cause;
  }
  EXPECT_NE(usageCause("nonsense").find("'nonsense' is not key=value"), std::string::npos);
}

TEST(PreprocessSpec, ToStringIsCanonicalAndReadsBack) {
  for (const char* text :
       {"resize=640x640 keep-aspect=pad pad-value=114 scale=1/255",
        "keep-aspect=crop channels=gray layout=chw mean=0.5 std=0.25",
        "rate=16000 frames=16000 hop=8000 scale=32768", "resample=nearest channels=rgb input=x",
        "pad-value=0.5 pad-align=top-left layout=hwc scale=0.003 mean=1e-05,2,-3"}) {
    Spec spec = Spec::parse(text);
    EXPECT_EQ(spec.toString(), text);
    EXPECT_EQ(Spec::parse(spec.toString()), spec) << text;
  }
  // Any order in, the canonical order out.
  EXPECT_EQ(Spec::parse("scale=1/255 resize=2x3").toString(), "resize=2x3 scale=1/255");
  Spec odd;
  odd.scale = 0.1 + 0.2;
  odd.mean = {1.0 / 3};
  EXPECT_EQ(Spec::parse(odd.toString()), odd) << odd.toString();
}

TEST(MediaKind, FollowsTheExtension) {
  EXPECT_EQ(mediaKindOf("a/b.png"), MediaKind::Image);
  EXPECT_EQ(mediaKindOf("B.JPG"), MediaKind::Image);
  EXPECT_EQ(mediaKindOf("c.Jpeg"), MediaKind::Image);
  EXPECT_EQ(mediaKindOf("d.wav"), MediaKind::Audio);
  EXPECT_EQ(mediaKindOf("e.FLAC"), MediaKind::Audio);
  EXPECT_EQ(mediaKindOf("f.npy"), MediaKind::None);
  EXPECT_EQ(mediaKindOf("png"), MediaKind::None);
}

}  // namespace
}  // namespace qopt::media
