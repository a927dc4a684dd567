// A stand-in for libFuzzer's driver when the compiler has none (gcc builds): runs the fuzz target
// once on every file in the directories or files given on the command line, so each committed
// seed corpus also runs as an ordinary test. Build with clang and -DTRPC_FUZZ=ON for real fuzzing.

#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0;
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "cannot stat %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      failures += RunFile(argv[i]);
      ++runs;
      continue;
    }
    DIR* dir = opendir(argv[i]);
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      failures += RunFile(std::string(argv[i]) + "/" + name);
      ++runs;
    }
    closedir(dir);
  }
  std::printf("replayed %zu inputs\n", runs);
  return failures == 0 && runs > 0 ? 0 : 1;
}
