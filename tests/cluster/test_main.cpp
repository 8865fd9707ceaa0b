#define BOOST_TEST_MODULE cluster
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
