// A stand-in for an image's /sbin/ldconfig in gpuop-cdi-hook's tests. Linked statically, so it
// runs in a root holding nothing else. It writes /ldconfig-ran (in the root it sees as "/"):
//   argv <arguments after argv[0], space separated>
//   env <the environment, space separated>
//   conf <what /etc/ld.so.conf.d/00-gpuop-driver.conf holds, newlines as '|'>
//   caps <effective capabilities, hex>
//   chroot <"refused" when chroot(2) fails, as it must without CAP_SYS_CHROOT>
//   host <"hidden" when /usr/bin, which the host has and the test's root has not, is not there>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char** environ;

int main(int argc, char** argv) {
  std::ostringstream out;
  out << "argv";
  for (int i = 1; i < argc; ++i) out << " " << argv[i];
  out << "\nenv";
  for (char** e = environ; *e != nullptr; ++e) out << " " << *e;
  std::ifstream conf("/etc/ld.so.conf.d/00-gpuop-driver.conf");
  std::string conf_text((std::istreambuf_iterator<char>(conf)), std::istreambuf_iterator<char>());
  for (char& c : conf_text) c = c == '\n' ? '|' : c;
  out << "\nconf " << conf_text;
  __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  __user_cap_data_struct data[2] = {};
  syscall(SYS_capget, &header, data);
  char caps[32];
  std::snprintf(caps, sizeof(caps), "%08x%08x", data[1].effective, data[0].effective);
  out << "\ncaps " << caps;
  out << "\nchroot " << (chroot("/") == 0 ? "allowed" : "refused");
  out << "\nhost " << (access("/usr/bin", F_OK) == 0 ? "visible" : "hidden");
  out << "\n";
  std::ofstream("/ldconfig-ran") << out.str();
  return argc > 1 && std::string(argv[1]) == "--fail" ? 3 : 0;
}
